import { useMutation } from "@urql/vue";
import { SetUpstreamKeyEnabledMutation } from "../../graphql/operator";

/** Enables or disables one key of an upstream's key pool. */
export function useUpstreamKeySwitch() {
  const op = useMutation(SetUpstreamKeyEnabledMutation);
  return {
    switching: op.fetching,
    setEnabled: (upstream: string, key: string, enabled: boolean) => op.executeMutation({ upstream, key, enabled }),
  };
}
