// A trace as a waterfall page, drawn from what Jaeger's query API returned, for the screenshot. Jaeger's own
// UI is not in a binary built from its Go module (its assets come from the separate jaeger-ui build, which no
// registry this project installs from carries), so the test draws the same data itself: one row per span,
// indented under its parent, a bar at its start and length, and its tags.

export interface WaterfallSpan {
  spanID: string;
  operationName: string;
  processID: string;
  startTime: number;
  duration: number;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

export interface WaterfallTrace {
  traceID: string;
  spans: WaterfallSpan[];
  processes: Record<string, { serviceName: string }>;
}

const escape = (text: string): string =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

// Temporal's own span tags are long ids; the page shows the ones an operator reads.
const SHOWN_TAGS = /^(mail\.|order\.|http\.|temporal|span\.kind|otel\.status)/;

export function traceWaterfallHtml(trace: WaterfallTrace): string {
  const byId = new Map(trace.spans.map((span) => [span.spanID, span]));
  const parentOf = (span: WaterfallSpan) => span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
  const depth = (span: WaterfallSpan): number => {
    const parent = parentOf(span);
    const found = parent === undefined ? undefined : byId.get(parent);
    return found === undefined ? 0 : 1 + depth(found);
  };
  const start = Math.min(...trace.spans.map((s) => s.startTime));
  const end = Math.max(...trace.spans.map((s) => s.startTime + s.duration));
  const total = Math.max(1, end - start);
  const rows = [...trace.spans]
    .sort((a, b) => a.startTime - b.startTime)
    .map((span) => {
      const service = trace.processes[span.processID]?.serviceName ?? '?';
      const left = ((span.startTime - start) / total) * 100;
      const width = Math.max(0.3, (span.duration / total) * 100);
      const tags = span.tags
        .filter((t) => SHOWN_TAGS.test(t.key))
        .map((t) => `${escape(t.key)}=${escape(String(t.value))}`)
        .join('  ');
      return `<tr><td style="padding-left:${8 + depth(span) * 16}px"><b>${escape(span.operationName)}</b>
        <div class="svc ${service === 'order-service' ? 'a' : 'b'}">${escape(service)}</div><div class="tags">${tags}</div></td>
        <td class="lane"><div class="bar ${service === 'order-service' ? 'a' : 'b'}" style="left:${left}%;width:${width}%"></div>
        <span class="ms" style="left:${Math.min(left + width, 92)}%">${(span.duration / 1000).toFixed(1)} ms</span></td></tr>`;
    })
    .join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><style>
    body{font:13px system-ui,sans-serif;margin:16px;color:#222} h1{font-size:16px}
    table{border-collapse:collapse;width:100%} td{border-bottom:1px solid #eee;vertical-align:top;padding:4px 8px}
    td:first-child{width:45%} .lane{position:relative} .bar{position:absolute;top:8px;height:12px;border-radius:2px}
    .a{background:#7aa7e8}.b{background:#6cc08b} .svc{display:inline-block;font-size:11px;padding:0 4px;border-radius:2px;color:#fff}
    .tags{font:11px monospace;color:#555} .ms{position:absolute;top:22px;font-size:11px;color:#555;padding-left:4px}
  </style></head><body><h1>Trace ${escape(trace.traceID)}: ${trace.spans.length} spans, ${(total / 1000).toFixed(1)} ms
  (from Jaeger's query API)</h1><table>${rows}</table></body></html>`;
}
