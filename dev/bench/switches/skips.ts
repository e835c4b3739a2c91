// The bench's switches: each leaves ONE extra out of the product's worker, to price it (docs/benchmarks.md,
// "What each extra costs"). Read only by dev/bench/switches/preload.ts, in the bench's own worker processes;
// the product's loadConfig refuses any BENCH_SKIP_ variable, so no deployment can turn one on.
import { preparedStatementName } from '../../../src/db/pool';

/** The switches, by the variant that turns each on. */
export const SWITCHES = {
  'product-nofence': 'BENCH_SKIP_FENCE',
  'product-noaudit': 'BENCH_SKIP_AUDIT',
  'product-noattrs': 'BENCH_SKIP_SEARCH_ATTRIBUTES',
  'product-nolog': 'BENCH_SKIP_LOG_LINES',
  // A proposal not made (docs/benchmarks.md), priced: no health UPDATE while healthy.
  'product-nohealthok': 'BENCH_SKIP_HEALTH_SUCCESS',
  // A setting at its other value, to price it: every statement unnamed (PG_PREPARED_STATEMENTS=false).
  'product-unprepared': 'BENCH_SKIP_PREPARED_STATEMENTS',
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
  /** Every statement unnamed, so Postgres parses and plans it on every call (the product's setting off). */
  preparedStatements: boolean;
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
    preparedStatements: take(SWITCHES['product-unprepared']) !== null,
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

/**
 * skipStatement applied to the arguments of a pool's query, as the product sends them: (text, values), or
 * named as { name, text, values } (PG_PREPARED_STATEMENTS). A rewritten named text gets a name of its own: a
 * connection refuses one name for two texts.
 */
export function skipQuery(
  args: readonly unknown[],
  skips: Pick<Skips, 'fence' | 'audit'> & Partial<Pick<Skips, 'healthSuccess'>>,
): { args: unknown[] } | { answer: { rows: never[]; rowCount: number } } {
  const [first, ...rest] = args;
  const named =
    typeof first === 'object' && first !== null && 'name' in first && 'text' in first
      ? (first as { name: unknown; text: unknown; values?: unknown })
      : null;
  const text = named === null ? first : named.text;
  if (typeof text !== 'string') return { args: [...args] };
  const [values, ...others] = named === null ? rest : [named.values, ...rest];
  const instead = skipStatement(text, skips);
  if ('answer' in instead) return instead;
  const kept =
    instead.params !== undefined && Array.isArray(values) ? values.slice(0, instead.params) : values;
  if (named === null) return { args: [instead.text, kept, ...others] };
  const name = instead.text === text ? named.name : preparedStatementName(instead.text);
  return { args: [{ ...named, name, text: instead.text, values: kept }, ...others] };
}
