// The standard OTEL_* variables, refused at start where this worker cannot do what they ask; the exporter
// reads the rest itself (docs/production.md, "Traces").
import type { TracingSettings } from '../tracing/tracing';
import { CONFIG_DEFAULTS } from './configDefaults';
import type { EnvReader } from './envReader';

/** What OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may say, and why the refused ones are refused. */
const PROTOCOLS: Record<string, string | null> = {
  'http/protobuf': null,
  'http/json':
    'is http/json, which needs @opentelemetry/exporter-trace-otlp-http, not shipped with this worker: use http/protobuf (the same endpoint takes both)',
  grpc: "is grpc, which this worker does not ship: use http/protobuf, on the collector's OTLP/HTTP port (4318)",
};

/** The way to a Zipkin, named wherever a setting asks this worker to feed one itself. */
const ZIPKIN_PATH =
  'use otlp to an OpenTelemetry Collector whose zipkin exporter feeds the Zipkin (docs/production.md#traces)';

/** Variables an earlier release read, refused when set so that a setting cannot silently stop working. */
const RETIRED: Record<string, string> = {
  OTEL_EXPORTER_ZIPKIN_ENDPOINT: `is no longer read: the worker exports only over OTLP; for a Zipkin, ${ZIPKIN_PATH}.`,
};

/**
 * On when OTEL_TRACES_EXPORTER says `otlp`, or, unset, when an OTLP endpoint is set; off with `none` or with
 * neither. Every problem goes into `problems`.
 */
export function readTracingSettings(read: EnvReader, problems: string[]): TracingSettings | null {
  const exporters = (read.optional('OTEL_TRACES_EXPORTER') ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  for (const name of exporters.filter((exporter) => exporter !== 'otlp' && exporter !== 'none')) {
    problems.push(
      `OTEL_TRACES_EXPORTER names ${name}, which this worker does not ship: ${name === 'zipkin' ? ZIPKIN_PATH : 'use otlp (an OpenTelemetry Collector forwards to other backends)'}, or none.`,
    );
  }
  for (const [variable, refusal] of Object.entries(RETIRED)) {
    if (read.optional(variable) !== null) problems.push(`${variable} ${refusal}`);
  }
  if (exporters.includes('none') && exporters.includes('otlp')) {
    problems.push('OTEL_TRACES_EXPORTER names both none and otlp: name one.');
  }
  const tracesEndpoint = read.optionalUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http:', 'https:']);
  const endpoint = read.optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  const batchDelayMs = read.positiveInt('OTEL_BSP_SCHEDULE_DELAY', CONFIG_DEFAULTS.OTEL_BSP_SCHEDULE_DELAY);
  const serviceName = read.optional('OTEL_SERVICE_NAME') ?? CONFIG_DEFAULTS.OTEL_SERVICE_NAME;
  const resourceAttributes = read.optional('OTEL_RESOURCE_ATTRIBUTES');
  if (resourceAttributes !== null) problems.push(...resourceAttributeProblems(resourceAttributes));

  const on = exporters.includes('none')
    ? false
    : exporters.includes('otlp') || tracesEndpoint !== null || endpoint !== null;
  if (!on) return null;
  // The signal's own variable wins over the general one, as for the endpoint.
  const protocolVariable =
    read.optional('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== null
      ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
      : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = read.optional(protocolVariable) ?? 'http/protobuf';
  const refusal = Object.hasOwn(PROTOCOLS, protocol) ? PROTOCOLS[protocol] : undefined;
  if (refusal === undefined) {
    problems.push(`${protocolVariable} must be http/protobuf (got ${protocol}).`);
  } else if (refusal !== null) {
    problems.push(`${protocolVariable} ${refusal}.`);
  }
  return { serviceName, batchDelayMs };
}

/** The detector drops the whole variable silently on a bad pair; here that is a problem instead. */
function resourceAttributeProblems(raw: string): string[] {
  const problems: string[] = [];
  for (const pair of raw.split(',').filter((piece) => piece.trim() !== '')) {
    const parts = pair.split('=');
    const key = parts[0]?.trim() ?? '';
    const value = (parts[1] ?? '').trim().replace(/^"|"$/g, '');
    if (parts.length !== 2 || key === '') {
      problems.push('OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas.');
    } else if (!isBaggageOctets(key) || !isBaggageOctets(value) || key.length > 255 || value.length > 255) {
      problems.push(
        `OTEL_RESOURCE_ATTRIBUTES: ${key} must be printable ASCII of at most 255 characters, without spaces, commas, semicolons or backslashes (percent-encode them).`,
      );
    } else {
      try {
        decodeURIComponent(value);
      } catch {
        problems.push(`OTEL_RESOURCE_ATTRIBUTES: the value of ${key} is not valid percent-encoding.`);
      }
    }
  }
  return [...new Set(problems)];
}

function isBaggageOctets(text: string): boolean {
  return /^[\x21-\x7e]*$/.test(text) && !/[,;\\]/.test(text);
}
