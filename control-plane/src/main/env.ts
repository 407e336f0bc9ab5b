// The control plane's numeric settings use the data plane's checked reader, so both refuse a bad value the same
// way (data-plane/src/env.ts).
export { numberEnv, wholeNumberEnv } from "@modelgate/data-plane";
