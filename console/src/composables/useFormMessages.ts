import type { CombinedError } from "@urql/vue";
import { reactive } from "vue";
import { describeError, fieldErrors } from "./errors";

/**
 * One message line per form, for pages with several forms: what the last action of each said. `act` runs an
 * action, keeps its success text or its error (the first field error, else the whole error as a sentence) under
 * the form's name, and answers whether it succeeded.
 */
export function useFormMessages() {
  const done = reactive<Record<string, string>>({});
  const failed = reactive<Record<string, string>>({});
  async function act(form: string, run: () => Promise<{ error?: CombinedError }>, success: string) {
    done[form] = "";
    failed[form] = "";
    const r = await run();
    if (r.error) {
      failed[form] = Object.values(fieldErrors(r.error))[0] ?? describeError(r.error);
      return false;
    }
    done[form] = success;
    return true;
  }
  return { done, failed, act };
}
