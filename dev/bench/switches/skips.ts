import { createHash } from 'node:crypto';

// The bench's switches: each leaves ONE extra out of the product's worker, to price it (docs/benchmarks.md,
// "What each extra costs"). Read only by dev/bench/switches/preload.ts, in the bench's own worker processes;
// the product's loadConfig refuses any BENCH_SKIP_ variable, so no deployment can turn one on.

/** The switches, by the variant that turns each on. */
export const SWITCHES = {
  'product-nofence': 'BENCH_SKIP_FENCE',
  'product-noaudit': 'BENCH_SKIP_AUDIT',
  'product-noattrs': 'BENCH_SKIP_SEARCH_ATTRIBUTES',
  'product-nolog': 'BENCH_SKIP_LOG_LINES',
  // The two proposals not made (docs/benchmarks.md), priced: no health UPDATE while healthy; prepared statements.
  'product-nohealthok': 'BENCH_SKIP_HEALTH_SUCCESS',
  'product-prepared': 'BENCH_SKIP_STATEMENT_PARSE',
  // A cut turned off, to price it: the SDK's entries under LOG_LEVEL buffered before they are dropped.
} as const;

export type SwitchVariant = keyof typeof SWITCHES;
export const SWITCH_VARIANTS = Object.keys(SWITCHES) as SwitchVariant[];

export interface Skips {
  fence: boolean;
  audit: boolean;
  /** The workflow bundle built without the upserts (dev/bench/switches/bundle.ts); null: the product's. */
  searchAttributesBundle: string | null;
  logLines: boolean;
  /** The health count's UPDATE after an answer is not run (the bench's provider is always healthy). */
  healthSuccess: boolean;
  /** Each statement named, so each connection parses and plans it once (a prepared statement). */
  statementParse: boolean;
}

/** Reads the switches and removes them from `env`, so the product's loadConfig never sees them. */
export function takeSkips(env: Record<string, string | undefined>): Skips {
  const take = (name: string): string | null => {
    const value = env[name];
    delete env[name];
    return value === undefined || value === '' ? null : value;
  };
  return {
    fence: take(SWITCHES['product-nofence']) !== null,
    audit: take(SWITCHES['product-noaudit']) !== null,
    searchAttributesBundle: take(SWITCHES['product-noattrs']),
    logLines: take(SWITCHES['product-nolog']) !== null,
    healthSuccess: take(SWITCHES['product-nohealthok']) !== null,
    statementParse: take(SWITCHES['product-prepared']) !== null,
  };
}

// The statements as src/mailRow/statements.ts builds them; test/cost/actionsPerOrder.test.ts checks that each
// pattern still finds its statement there, so a change to a statement cannot silently turn a switch off.
const FENCE = /^UPDATE order_mail_log SET dispatched_at = now\(\), updated_at = now\(\),/;
const RECORD_SET =
  /(WITH settled AS \(\s*UPDATE order_mail_log AS log\s+SET )(state = \$\d+, outcome = \$\d+, unknown_policy = \$\d+,\s+verification = )/;
const HEALTH_SUCCESS =
  /^UPDATE order_mail_provider_health\s+SET consecutive_failures = 0, skip_until = NULL,/;
const RECORD_AUDIT =
  /\), audit AS \(\s*INSERT INTO order_mail_attempts[\s\S]*?FROM settled\s*\)\s*(SELECT state, outcome FROM settled)$/;

/**
 * What to run instead of `text`: the statement rewritten, or an answer without a statement (the fence left
 * out: it "passes", and the record sets dispatched_at, which the table requires of an accepted row).
 */
export function skipStatement(
  text: string,
  skips: Pick<Skips, 'fence' | 'audit'> & Partial<Pick<Skips, 'healthSuccess'>>,
): { text: string; params?: number } | { answer: { rows: never[]; rowCount: number } } {
  if (skips.fence && FENCE.test(text)) return { answer: { rows: [], rowCount: 1 } };
  // As a healthy provider's row answers it: nothing to reset, no row changed.
  if (skips.healthSuccess === true && HEALTH_SUCCESS.test(text)) return { answer: { rows: [], rowCount: 0 } };
  let rewritten = text;
  if (skips.fence)
    rewritten = rewritten.replace(RECORD_SET, '$1dispatched_at = coalesce(log.dispatched_at, now()), $2');
  if (!skips.audit || !RECORD_AUDIT.test(rewritten)) return { text: rewritten };
  rewritten = rewritten.replace(RECORD_AUDIT, ') $1');
  // The audit row's own value (recorded_by, the last parameter) went with it: Postgres counts the rest.
  const params = Math.max(0, ...[...rewritten.matchAll(/\$(\d+)/g)].map((match) => Number(match[1])));
  return { text: rewritten, params };
}

/** The statement's name when prepared: one per text, so a connection never reuses a name for another text. */
export function preparedName(text: string): string {
  return `bench_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
}
