// The part of autocannon 9's API the bench uses (the package ships no types, and @types/autocannon is not installed).
declare module "autocannon" {
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    timeout?: number;
  }
  interface Histogram {
    average: number;
    mean: number;
    total: number;
    p50: number;
    p99: number;
  }
  interface Result {
    start: Date | string;
    finish: Date | string;
    duration: number;
    requests: Histogram;
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
  }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
