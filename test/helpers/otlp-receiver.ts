import { createServer, type Server } from "node:http";
import { freePort } from "./processes.ts";

// An OTLP/HTTP trace receiver for tests: takes what an OpenTelemetry exporter sends to /v1/traces (the JSON
// encoding the official OTLP/HTTP exporter uses) and decodes it into plain spans.

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean | (string | number | boolean)[]>;
  status: { code?: number; message?: string };
  startNs: bigint;
  endNs: bigint;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
type KeyValue = { key: string; value: AnyValue };

const scalar = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? "";
const valueOf = (v: AnyValue) => (v.arrayValue ? (v.arrayValue.values ?? []).map(scalar) : scalar(v));
const attrs = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** content types of the requests received, to show what the exporter sent */
  contentTypes: string[];
  /** every request body as it arrived */
  raw: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const raw: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      contentTypes.push(String(req.headers["content-type"]));
      if (
        req.method !== "POST" ||
        req.url !== "/v1/traces" ||
        !String(req.headers["content-type"]).startsWith("application/json")
      ) {
        res.writeHead(415).end();
        return;
      }
      raw.push(Buffer.concat(chunks).toString("utf8"));
      const body = JSON.parse(raw[raw.length - 1]!) as {
        resourceSpans?: {
          resource?: { attributes?: KeyValue[] };
          scopeSpans?: { spans?: Record<string, unknown>[] }[];
        }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attrs(rs.resource?.attributes)["service.name"] ?? "");
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service,
              traceId: String(s.traceId),
              spanId: String(s.spanId),
              parentSpanId: String(s.parentSpanId ?? ""),
              name: String(s.name),
              kind: Number(s.kind),
              attributes: attrs(s.attributes as KeyValue[]),
              status: (s.status ?? {}) as ReceivedSpan["status"],
              startNs: BigInt(String(s.startTimeUnixNano)),
              endNs: BigInt(String(s.endTimeUnixNano)),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    raw,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
