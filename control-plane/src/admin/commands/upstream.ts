import { z } from "zod";
import { setUpstreamKeyEnabled } from "../../services/upstream-keys.ts";
import { command } from "../command.ts";

// Upstream key pools (docs/routing.md): take a key out of the rotation, or bring back one the gateway disabled
// when its provider refused it.

const keyArgs = z.object({ upstream: z.string().min(1), key: z.string().min(1) });

export const upstreamCommands = {
  "upstream key enable": command({
    usage: "--upstream NAME --key ID",
    note: "a key the gateway disabled (401/403, 402, out of quota) stays so until enabled here",
    args: keyArgs,
    run: (ctx, a) => setUpstreamKeyEnabled(ctx, a.upstream, a.key, true),
  }),
  "upstream key disable": command({
    usage: "--upstream NAME --key ID",
    args: keyArgs,
    run: (ctx, a) => setUpstreamKeyEnabled(ctx, a.upstream, a.key, false),
  }),
};
