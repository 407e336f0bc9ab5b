import { ref } from "vue";

/** Copies text and remembers, for a moment, that it did (for a "Copied" label). */
export function useClipboard() {
  const copied = ref(false);
  const failed = ref(false);
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function copy(text: string): Promise<boolean> {
    failed.value = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
      } else {
        // plain-http deployments: the async clipboard API is unavailable, fall back to a hidden textarea
        const area = document.createElement("textarea");
        area.value = text;
        area.setAttribute("readonly", "");
        area.style.position = "fixed";
        area.style.opacity = "0";
        document.body.appendChild(area);
        area.select();
        const ok = document.execCommand("copy");
        area.remove();
        if (!ok) throw new Error("copy refused");
      }
      copied.value = true;
      clearTimeout(timer);
      timer = setTimeout(() => (copied.value = false), 1800);
      return true;
    } catch {
      failed.value = true;
      return false;
    }
  }
  return { copy, copied, failed };
}
