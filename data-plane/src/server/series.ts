// Counters and histograms for the request path, registered in a prom-client Registry (which renders them)
// but updated without prom-client's per-update work (label validation, sorting and hashing the label
// object), which was a visible share of the data plane's CPU per call. The caller names a series by a
// string key it builds cheaply and passes the labels only the first time the series appears.

/** What prom-client's Registry reads from a metric's get() to render it. */
export interface RenderedMetric {
  name: string;
  help: string;
  type: "counter" | "histogram";
  aggregator: "sum";
  values: { metricName?: string; labels: Record<string, string | number>; value: number }[];
}

export interface Series {
  labels: Record<string, string>;
  value: number;
}

export interface HistogramSeries {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

export class FastCounter {
  private readonly series = new Map<string, Series>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(key: string, labels: () => Record<string, string>, by = 1): void {
    this.at(key, labels).value += by;
  }

  /** The series itself, for a caller that keeps it and adds to `value` directly (no key built per update). */
  at(key: string, labels: () => Record<string, string>): Series {
    let s = this.series.get(key);
    if (s === undefined) this.series.set(key, (s = { labels: labels(), value: 0 }));
    return s;
  }

  /** prom-client's metric interface: what the registry renders. */
  get(): Promise<RenderedMetric> {
    const values = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value }));
    return Promise.resolve({ name: this.name, help: this.help, type: "counter", aggregator: "sum", values });
  }
}

export class FastHistogram {
  private readonly series = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(key: string, labels: () => Record<string, string>, value: number): void {
    this.observeIn(this.at(key, labels), value);
  }

  /** The series itself, for a caller that keeps it and passes it to observeIn (no key built per update). */
  at(key: string, labels: () => Record<string, string>): HistogramSeries {
    let s = this.series.get(key);
    if (s === undefined)
      this.series.set(
        key,
        (s = { labels: labels(), counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 }),
      );
    return s;
  }

  observeIn(s: HistogramSeries, value: number): void {
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]!) {
        s.counts[i]!++;
        break;
      }
    }
    s.sum += value;
    s.count++;
  }

  get(): Promise<RenderedMetric> {
    const values: RenderedMetric["values"] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i]!;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le: this.buckets[i]!, ...s.labels },
          value: cumulative,
        });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { le: "+Inf", ...s.labels }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: "histogram", aggregator: "sum", values });
  }
}
