// The operator CLI's grammar: argv → one command, or a UsageError that says what is wrong. Pure.
import { parseArgs } from 'node:util';
import type { BulkFilter, BulkVerb } from '../db/bulkActs';
import type { MailLogFilter } from '../db/orderMailLog';
import type { LogOutcome } from '../shared/mailOutcome';
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';
import type { ResolveAs } from './resolveOrderMail';
import { MAIL_PROVIDER_NAMES } from '../mail/providers/mailProvider';

export type OpsCommand =
  | { name: 'help' }
  | { name: 'status'; orderId: string; json: boolean }
  | { name: 'preview'; orderId: string; json: boolean }
  | { name: 'list'; filter: MailLogFilter; since: Date | null; limit: number | undefined; json: boolean }
  | {
      name: 'retry';
      orderId: string;
      reason: string;
      json: boolean;
    }
  | {
      name: 'resolve';
      orderId: string;
      as: ResolveAs;
      reason: string;
      /** Resolve as failed a row the second look reopened, knowing the customer may get two mails. */
      force: boolean;
      json: boolean;
    }
  | { name: 'provider'; provider: ProviderAct; json: boolean }
  /** scope: '*' for every provider (src/ops/sendHold.ts). */
  | { name: 'hold'; scope: string; reason: string; waitMs: number | undefined; json: boolean }
  | { name: 'resume'; scope: string; reason: string; ratePerSecond: number | undefined; json: boolean }
  /** `bulk retry|resolve … --dry-run` saves a selection; `bulk run <id>` acts on it (src/ops/bulkActs.ts). */
  | { name: 'bulk'; bulk: BulkAct; json: boolean };

export type BulkAct =
  | { act: 'dry-run'; verb: BulkVerb; filter: BulkFilter; reason: string; max: number | undefined }
  | { act: 'run'; id: string };

/** `provider …`: see or steer the failover's provider health (src/ops/providerOps.ts). */
export type ProviderAct =
  | { act: 'status' }
  | { act: 'pin' | 'skip'; provider: string }
  /** Back to automatic: one provider, or (null) every one. */
  | { act: 'auto'; provider: string | null };

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'ERR_OPS_USAGE';
}

export const OPS_USAGE = `Usage: npm run ops -- <command> [options]

  status  <orderId>                                   the log row, attempts, operator acts, workflow, UI link
  preview <orderId>                                   the order's mail as the worker renders it; sends nothing
                                                      (runs with the worker's DATABASE_URL and MAIL_* settings)
  list    --state failed|unknown|sending|sent|second-look [--since 24h|7d|2026-11-01T00:00Z] [--limit 50]
  retry   <orderId> --reason "…"                      reset the workflow to its first workflow task (UI: Reset)
  resolve <orderId> --as sent|failed --reason "…"     settle the row by your word (the only way to move 'sent');
          [--force]                                   as failed a row the second look reopened (may mail twice)
  provider status                                     each provider's health, operator mode and recent attempts
  provider pin <provider> | skip <provider>           send new attempts to it / past it (failover, MAIL_PROVIDERS)
  provider auto [<provider>]                          back to automatic: that provider, or every one
  hold    [--provider <p>] --reason "…" [--wait 120]  stop every send (or one provider's) now; returns when
                                                      nothing dispatched before it is in flight (or lists it)
  resume  [--provider <p>] --reason "…" [--rate 20]   lift that hold; signal the held runs, --rate a second
  bulk    retry|resolve --as sent|failed --dry-run    select orders and save the selection; changes nothing else
          [--state sent|failed|sending] [--outcome o] [--since 1h] [--until ISO] [--provider p]
          [--template name[@sha256-prefix]] --reason "…" [--max N]  (--max needed above 100 orders)
  bulk    run <id>                                    act on that saved selection if it is unchanged, one act per
                                                      order; run it again to resume an interrupted run

Options: --json (machine-readable output).
Environment: OPS_DATABASE_URL (your own login: every act is recorded under it), TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TEMPORAL_UI_URL.`;

const FILTERS: readonly MailLogFilter[] = ['failed', 'unknown', 'sending', 'sent', 'second-look'];
const MAX_LIMIT = 1_000;

export function parseOpsCommand(argv: readonly string[], now: Date = new Date()): OpsCommand {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') return { name: 'help' };
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(rest);
  } catch (error) {
    // node:util's messages name the offending option ("Unknown option '--frobnicate'").
    throw new UsageError(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const { values, positionals } = parsed;
  if (values.operator !== undefined) {
    // Gone: a name anyone may type is not who acted. Said plainly, so an old script fails before acting.
    throw new UsageError(
      `${name}: --operator is no longer taken: every act is recorded under your own database login ` +
        '(OPS_DATABASE_URL, docs/operating.md).',
    );
  }
  const json = values.json ?? false;
  switch (name) {
    case 'status':
    case 'preview':
      return { name, orderId: onlyOrderId(name, positionals), json };
    case 'list': {
      if (positionals.length > 0)
        throw new UsageError(`list takes no order id (got ${positionals.join(' ')}).`);
      return {
        name,
        filter: oneOf('--state', values.state, FILTERS, name),
        since: values.since === undefined ? null : parseSince(values.since, now),
        limit: values.limit === undefined ? undefined : parseLimit(values.limit),
        json,
      };
    }
    case 'retry':
      return {
        name,
        orderId: onlyOrderId(name, positionals),
        reason: requiredReason(name, values.reason),
        json,
      };
    case 'resolve':
      return {
        name,
        orderId: onlyOrderId(name, positionals),
        as: oneOf('--as', values.as, ['sent', 'failed'] as const, name),
        reason: requiredReason(name, values.reason),
        force: values.force ?? false,
        json,
      };
    case 'provider':
      return { name, provider: parseProviderAct(positionals), json };
    case 'hold':
    case 'resume': {
      if (positionals.length > 0)
        throw new UsageError(
          `${name} takes no positional argument (got ${positionals.join(' ')}); --provider names one.`,
        );
      const scope = values.provider === undefined ? '*' : knownProvider(values.provider, name);
      const reason = requiredReason(name, values.reason);
      if (name === 'hold') {
        if (values.rate !== undefined) throw new UsageError('hold takes no --rate (resume does).');
        const waitMs =
          values.wait === undefined ? undefined : 1000 * boundedInteger('--wait', values.wait, 1, 3_600);
        return { name, scope, reason, waitMs, json };
      }
      if (values.wait !== undefined) throw new UsageError('resume takes no --wait (hold does).');
      const ratePerSecond =
        values.rate === undefined ? undefined : boundedInteger('--rate', values.rate, 1, 1_000);
      return { name, scope, reason, ratePerSecond, json };
    }
    case 'bulk':
      return { name, bulk: parseBulkAct(positionals, values, now), json };
    default:
      throw new UsageError(
        `Unknown command "${name}". Commands: status, preview, list, retry, resolve, provider, hold, resume, bulk.`,
      );
  }
}

// The options that take a value: the argument after one of them is its value, even when it starts with '-'.
const VALUE_OPTIONS: ReadonlySet<string> = new Set([
  '--state',
  '--since',
  '--limit',
  '--reason',
  '--as',
  '--operator',
  '--provider',
  '--wait',
  '--rate',
  '--outcome',
  '--until',
  '--template',
  '--max',
]);

function parseOptions(args: string[]) {
  return parseArgs({
    args: negativeNumbersAsPositionals(args),
    allowPositionals: true,
    strict: true,
    options: {
      state: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      reason: { type: 'string' },
      as: { type: 'string' },
      operator: { type: 'string' },
      provider: { type: 'string' },
      wait: { type: 'string' },
      rate: { type: 'string' },
      outcome: { type: 'string' },
      until: { type: 'string' },
      template: { type: 'string' },
      max: { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      force: { type: 'boolean' },
    },
  });
}

/** `status -1` is a typo for an order id, not an option: passed on as a positional so the id check names it. */
function negativeNumbersAsPositionals(args: string[]): string[] {
  const rest: string[] = [];
  const numbers: string[] = [];
  for (const [index, arg] of args.entries()) {
    if (arg === '--') return [...rest, ...args.slice(index), ...numbers];
    const previous = args[index - 1];
    const isOptionValue = previous !== undefined && VALUE_OPTIONS.has(previous);
    if (/^-[0-9]/.test(arg) && !isOptionValue) numbers.push(arg);
    else rest.push(arg);
  }
  return numbers.length === 0 ? rest : [...rest, '--', ...numbers];
}

function onlyOrderId(command: string, positionals: string[]): string {
  if (positionals.length !== 1) {
    throw new UsageError(`${command} takes exactly one order id (got ${positionals.length}).`);
  }
  try {
    return parseOrderId(positionals[0]);
  } catch (error) {
    if (error instanceof InvalidOrderIdError) throw new UsageError(`${command}: ${error.message}`);
    throw error;
  }
}

function requiredReason(command: string, reason: string | undefined): string {
  if (reason === undefined || reason.trim() === '') {
    throw new UsageError(
      `${command} needs --reason "…": every operator act is recorded with who did it, when and why.`,
    );
  }
  return reason.trim();
}

function oneOf<T extends string>(
  option: string,
  value: string | undefined,
  allowed: readonly T[],
  command: string,
): T {
  if (value === undefined) throw new UsageError(`${command} needs ${option} ${allowed.join('|')}.`);
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${command}: ${option} must be one of ${allowed.join(', ')} (got "${value}").`);
  }
  return value as T;
}

const RELATIVE = /^([1-9][0-9]*)(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

function parseSince(value: string, now: Date): Date {
  const relative = RELATIVE.exec(value);
  if (relative)
    return new Date(now.getTime() - Number(relative[1]) * UNIT_MS[relative[2] as 'm' | 'h' | 'd']);
  // Only full ISO dates: Date.parse accepts too much ("1", "March") to be trusted with an operator's typo.
  if (
    /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) &&
    !Number.isNaN(Date.parse(value))
  ) {
    return new Date(value);
  }
  throw new UsageError(
    `--since must be like 30m, 24h, 7d or an ISO date such as 2026-11-01T00:00Z (got "${value}").`,
  );
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!/^[0-9]+$/.test(value) || limit < 1 || limit > MAX_LIMIT) {
    throw new UsageError(`--limit must be an integer from 1 to ${MAX_LIMIT} (got "${value}").`);
  }
  return limit;
}

function boundedInteger(option: string, value: string, min: number, max: number): number {
  const number = Number(value);
  if (!/^[0-9]+$/.test(value) || number < min || number > max) {
    throw new UsageError(`${option} must be an integer from ${min} to ${max} (got "${value}").`);
  }
  return number;
}

function knownProvider(name: string, command: string): string {
  if (!(MAIL_PROVIDER_NAMES as readonly string[]).includes(name)) {
    throw new UsageError(
      `${command}: unknown provider "${name}"; one of ${MAIL_PROVIDER_NAMES.join(', ')}. Nothing was changed.`,
    );
  }
  return name;
}

function parseProviderAct(positionals: string[]): ProviderAct {
  const [act, provider, ...extra] = positionals;
  const known = (name: string | undefined, what: string): string => {
    if (name === undefined)
      throw new UsageError(`provider ${what} needs a provider: ${MAIL_PROVIDER_NAMES.join(', ')}.`);
    if (!(MAIL_PROVIDER_NAMES as readonly string[]).includes(name)) {
      throw new UsageError(
        `provider ${what}: unknown provider "${name}"; one of ${MAIL_PROVIDER_NAMES.join(', ')}. Nothing was changed.`,
      );
    }
    return name;
  };
  if (extra.length > 0) throw new UsageError(`provider ${act ?? ''}: unexpected ${extra.join(' ')}.`);
  switch (act) {
    case 'status':
      if (provider !== undefined)
        throw new UsageError('provider status takes no provider: it shows them all.');
      return { act };
    case 'pin':
    case 'skip':
      return { act, provider: known(provider, act) };
    case 'auto':
      return { act, provider: provider === undefined ? null : known(provider, act) };
    default:
      throw new UsageError(
        `provider needs one of status, pin, skip, auto (got ${JSON.stringify(act ?? '')}).`,
      );
  }
}

const BULK_STATES = ['sending', 'sent', 'failed'] as const;
const BULK_OUTCOMES: readonly LogOutcome[] = [
  'accepted',
  'rejected',
  'not_sent',
  'unknown',
  'resolved',
  'legacy',
];
const BULK_MAX_LIMIT = 10_000;

function parseBulkAct(
  positionals: string[],
  values: ReturnType<typeof parseOptions>['values'],
  now: Date,
): BulkAct {
  const [verb, ...rest] = positionals;
  if (verb === 'run') {
    const [id, ...extra] = rest;
    if (id === undefined || extra.length > 0 || !/^[1-9][0-9]{0,17}$/.test(id)) {
      throw new UsageError('bulk run takes exactly one bulk act id, as its dry run printed it.');
    }
    const given = [
      'state',
      'outcome',
      'since',
      'until',
      'provider',
      'template',
      'max',
      'reason',
      'as',
      'dry-run',
    ].filter((option) => values[option as keyof typeof values] !== undefined);
    if (given.length > 0) {
      throw new UsageError(
        `bulk run takes only the id: the selection, reason and bound are the dry run's (got --${given.join(', --')}).`,
      );
    }
    return { act: 'run', id };
  }
  if (verb !== 'retry' && verb !== 'resolve') {
    throw new UsageError(`bulk needs retry, resolve or run (got ${JSON.stringify(verb ?? '')}).`);
  }
  if (rest.length > 0) throw new UsageError(`bulk ${verb} takes no order id: its filter selects them.`);
  if (values['dry-run'] !== true) {
    throw new UsageError(
      `bulk ${verb} starts with --dry-run: it saves the selection and prints its id; then npm run ops -- bulk run <id>.`,
    );
  }
  const bulkVerb: BulkVerb =
    verb === 'retry'
      ? { verb }
      : { verb, as: oneOf('--as', values.as, ['sent', 'failed'] as const, 'bulk resolve') };
  if (verb === 'retry' && values.as !== undefined) throw new UsageError('bulk retry takes no --as.');
  const [template, templateSha256] = (values.template ?? '').split('@', 2);
  if (templateSha256 !== undefined && !/^[0-9a-f]{4,64}$/.test(templateSha256)) {
    throw new UsageError(
      `--template name@hash: the hash is 4 to 64 hex digits of its SHA-256 (got "${templateSha256}").`,
    );
  }
  const since = values.since === undefined ? null : parseSince(values.since, now);
  // A range that ends at the dry run: mails claimed after it do not enter the selection the run compares.
  const until = values.until === undefined ? (since === null ? null : now) : parseSince(values.until, now);
  const filter: BulkFilter = {
    state: values.state === undefined ? null : oneOf('--state', values.state, BULK_STATES, 'bulk'),
    outcome: values.outcome === undefined ? null : oneOf('--outcome', values.outcome, BULK_OUTCOMES, 'bulk'),
    since: since?.toISOString() ?? null,
    until: until?.toISOString() ?? null,
    provider: values.provider === undefined ? null : knownProvider(values.provider, 'bulk'),
    template: template === undefined || template === '' ? null : template,
    templateSha256: templateSha256 ?? null,
  };
  if (Object.values(filter).every((value) => value === null)) {
    throw new UsageError(
      'bulk needs at least one of --state, --outcome, --since, --until, --provider, --template: it never selects every order.',
    );
  }
  return {
    act: 'dry-run',
    verb: bulkVerb,
    filter,
    reason: requiredReason('bulk', values.reason),
    max: values.max === undefined ? undefined : boundedInteger('--max', values.max, 1, BULK_MAX_LIMIT),
  };
}
