// `npm run chaos -- --send-outage S`: the normal shape of an outage. Once every order has started, every send is
// dropped before the provider for S seconds (a proxy or edge that dies after the request was written: the
// provider never gets it, the worker hears nothing), then the provider is healthy again. Nothing is accepted in
// the window, so no customer's send can witness a "not found" (docs/design.md §5): the unknowns of the window are
// answered by the lookup only once a witness probe (src/verification/witnessProbe.ts) is accepted after it.
// The report says how long each took, per provider, and when the last mail went.
import type { Database } from '../../src/db/pool';
import { MAIL_PROVIDER_FACTS } from '../../src/mail/providers/mailProvider';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { RunOptions } from './runOptions';

/**
 * The settle delay of the run: the product's own where it is 30 s or less (generic), else 30 s. Postmark's 5 min
 * and Mailgun's 30 min would make one run last 10 min and over an hour; the sandbox's emulations index within
 * 1 s, which is the reason the workers are given (MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON).
 */
export const SEND_OUTAGE_MAX_SETTLE_DELAY_MS = 30_000;

/** A quiet system but for the outage, at the product's settle delay, unless a flag of the command line asks. */
export function applySendOutageDefaults(
  options: RunOptions,
  argv: string[],
  usage: (message: string) => Error,
): void {
  const asked = (flag: string) => argv.includes(flag);
  if (options.transport !== 'http') throw usage('--send-outage drops HTTP sends; not with --transport smtp');
  if (options.failover !== null || options.operators !== null || options.cluster !== null) {
    throw usage('--send-outage runs alone: not with --failover, --operators or --cluster');
  }
  for (const [flag, key] of [
    ['--accept-then-drop', 'acceptThenDrop'],
    ['--hang', 'hang'],
    ['--5xx', 'serverError'],
    ['--429', 'tooManyRequests'],
    ['--503', 'unavailable'],
    ['--drop', 'dropWithoutProcessing'],
    ['--slow', 'slow'],
  ] as const) {
    if (!asked(flag)) options.faults[key] = 0;
  }
  if (!asked('--workers')) options.workers = 3;
  if (!asked('--kill-every')) options.killEveryMs = 0;
  if (!asked('--refuse-every')) options.refuseEveryMs = 0;
  if (!asked('--restart-postgres')) options.restartPostgresAt = null;
  if (!asked('--restart-temporal')) options.restartTemporalAt = null;
  if (!asked('--lookup-faults')) options.verification.lookupFaults = 0;
  if (!asked('--webhook-loss')) options.verification.webhookLoss = 0;
  if (!asked('--webhook-duplicates')) options.verification.webhookDuplicates = 0;
  if (!asked('--settle-delay')) {
    const facts = MAIL_PROVIDER_FACTS[options.verification.provider].verification;
    options.verification.settleDelayMs = Math.min(
      facts?.settleDelayMs ?? SEND_OUTAGE_MAX_SETTLE_DELAY_MS,
      SEND_OUTAGE_MAX_SETTLE_DELAY_MS,
    );
  }
}

/** When the outage was, by the runner's clock (Date.now()). */
export interface OutageWindow {
  startedAt: number;
  endedAt: number;
}

/**
 * Drops every send for `ms` (less if `signal` aborts: the run is stopping), then lets the sandbox take them
 * again (the run has no other fault).
 */
export async function dropEverySend(
  sandbox: MailSandbox,
  ms: number,
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<OutageWindow> {
  const startedAt = Date.now();
  say(`send outage: every send dropped before the provider for ${Math.round(ms / 1000)} s`);
  sandbox.setFaultPlan({ rates: [{ fault: { kind: 'drop-without-processing' }, probability: 1 }] });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
  sandbox.setFaultPlan({ rates: [] });
  const endedAt = Date.now();
  say('send outage: over, the provider takes sends again');
  return { startedAt, endedAt };
}

/** What the report says of a --send-outage run, read from the run's tables after it. */
export interface SendOutageFacts {
  window: OutageWindow;
  /** Witness probes by outcome ('in flight' for one never answered), and how many left after the outage. */
  probes: Record<string, number>;
  probesAfterOutage: number;
  /** The attempts that were unknown and waited for evidence, each with how it was answered, and when. */
  unknowns: {
    orderId: string;
    provider: string;
    answer: 'found' | 'not found' | 'policy';
    answeredAt: number;
  }[];
  /** When the provider took the run's last customer mail (the sandbox's clock, the runner's machine). */
  lastMailAt: number | null;
}

export async function readSendOutageFacts(
  db: Database,
  input: { window: OutageWindow; orderIds: string[]; lastMailAt: number | null },
): Promise<SendOutageFacts> {
  const { rows: probeRows } = await db.query<{ outcome: string | null; count: number; after: number }>(
    `SELECT outcome, count(*)::int AS count,
            count(*) FILTER (WHERE dispatched_at > to_timestamp($1::double precision / 1000))::int AS after
       FROM order_mail_witness_probes GROUP BY outcome`,
    [input.window.endedAt],
  );
  const probes: Record<string, number> = {};
  let probesAfterOutage = 0;
  for (const row of probeRows) {
    probes[row.outcome ?? 'in flight'] = row.count;
    probesAfterOutage += row.after;
  }
  // An unknown that waited for evidence: its attempt was settled by the lookup (found: sent/accepted, not found:
  // failed/not_sent) or by the policy (verification inconclusive).
  const { rows } = await db.query<{
    orderId: string;
    provider: string | null;
    verification: string;
    state: string;
    finishedAt: Date;
  }>(
    `SELECT order_id::text AS "orderId", provider, verification, state, finished_at AS "finishedAt"
       FROM order_mail_attempts
      WHERE order_id = ANY($1::bigint[]) AND verification IN ('lookup', 'inconclusive')`,
    [input.orderIds],
  );
  return {
    window: input.window,
    probes,
    probesAfterOutage,
    unknowns: rows.map((row) => ({
      orderId: row.orderId,
      provider: row.provider ?? 'unknown',
      answer: row.verification === 'inconclusive' ? 'policy' : row.state === 'sent' ? 'found' : 'not found',
      answeredAt: row.finishedAt.getTime(),
    })),
    lastMailAt: input.lastMailAt,
  };
}

export interface SendOutageSection {
  outageSeconds: number;
  probes: Record<string, number>;
  probesAfterOutage: number;
  /** Per provider: the unknowns answered found / not found / by the policy, and the longest wait after the end. */
  perProvider: Record<
    string,
    { found: number; notFound: number; byPolicy: number; maxSecondsAfterOutage: number | null }
  >;
  lastMailSecondsAfterOutage: number | null;
}

export function buildSendOutageSection(facts: SendOutageFacts): SendOutageSection {
  const { window } = facts;
  const perProvider: SendOutageSection['perProvider'] = {};
  const seconds = (ms: number) => Math.round(ms / 100) / 10;
  for (const unknown of facts.unknowns) {
    const entry = (perProvider[unknown.provider] ??= {
      found: 0,
      notFound: 0,
      byPolicy: 0,
      maxSecondsAfterOutage: null,
    });
    if (unknown.answer === 'found') entry.found += 1;
    else if (unknown.answer === 'not found') entry.notFound += 1;
    else entry.byPolicy += 1;
    if (unknown.answer !== 'policy') {
      const after = seconds(Math.max(0, unknown.answeredAt - window.endedAt));
      entry.maxSecondsAfterOutage = Math.max(entry.maxSecondsAfterOutage ?? 0, after);
    }
  }
  return {
    outageSeconds: seconds(window.endedAt - window.startedAt),
    probes: facts.probes,
    probesAfterOutage: facts.probesAfterOutage,
    perProvider,
    lastMailSecondsAfterOutage: facts.lastMailAt === null ? null : seconds(facts.lastMailAt - window.endedAt),
  };
}

export function formatSendOutageSection(section: SendOutageSection): string {
  const lines = [
    `send outage: every send dropped for ${section.outageSeconds} s once all orders had started`,
    `  witness probes: ${
      Object.entries(section.probes)
        .map(([outcome, count]) => `${count} ${outcome}`)
        .join(', ') || 'none'
    } (${section.probesAfterOutage} after the outage)`,
  ];
  for (const [provider, entry] of Object.entries(section.perProvider)) {
    lines.push(
      `  ${provider}: unknowns answered found ${entry.found}, not found ${entry.notFound}, by the policy ` +
        `${entry.byPolicy}; the last answered ${entry.maxSecondsAfterOutage ?? '-'} s after the outage ended`,
    );
  }
  lines.push(`  last customer mail: ${section.lastMailSecondsAfterOutage ?? '-'} s after the outage ended`);
  return lines.join('\n');
}
