// THE CLAIM (docs: the row's state machine, rules 1 and 3): who may send an order's mail, and every
// transition that hands the row to a new attempt or settles one that a closed run left behind. Each
// transition is one statement whose WHERE clause is its fence: the row exactly as this pass read it.
// The claim activity (src/activities/claimOrderMail.ts) calls claimOrderMailRow with its run's identity; the
// property test (test/property) calls it with its racers'; the reconciliation sweep settles orphans with
// settleClosedRunClaim.
//
// THE CLAIM'S INPUTS (a contract: a test that runs workers with skewed clocks relies on it):
// - claimToken '<namespace>/<workflow id>/<run id>' comes from the activity's own context, never from an
//   argument, so no caller can claim with another run's token;
// - issuedAt is the workflow's Date.now() when it scheduled the claim: Temporal's time of that workflow task,
//   stamped by the server and recorded in history, the same on every retry and replay. NO worker clock enters
//   the claim: not the activity's scheduled time (for a local activity the worker stamps it), not now().
//   Runs of one workflow id are ordered by it: a run closed by a reset or terminate issues nothing afterwards,
//   so every claim of a later run is issued later, and a late claim from a closed run is recognisably older.
//   (workflowInfo().runStartTime is NOT such a value: a run reset to a later workflow task replays the base
//   run's first task and gets the base run's start time.)
// - Equal issuedAt values order nothing: neither claim takes the row from the other. A run's own claim is
//   always recognised by its token, whatever the times.
// Postgres's now() is used only for audit times (claimed_at, updated_at), never to order claims.
import type { LogOutcome, UnknownOutcomePolicy } from '../shared/mailOutcome';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type UnknownOutcomeDecision,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import type { IdempotencyRetrySettings } from '../shared/workflowSettings';
import { chooseProvider, type EarlierAttempt, type ProviderChoice } from '../shared/providerChoice';
import { readProviderStandings } from './providerHealth';
import {
  readMailLog,
  timeSinceAttemptDispatch,
  timeSinceKeyFirstDispatch,
  type MailLogRow,
} from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql, type SqlFragment } from './sql';

/** '<namespace>/<workflow id>/': every run of a workflow id shares it. */
export function workflowScopeOf(namespace: string, workflowId: string): string {
  return `${namespace}/${workflowId}/`;
}

export function claimTokenOf(namespace: string, workflowId: string, runId: string): string {
  return `${workflowScopeOf(namespace, workflowId)}${runId}`;
}

/**
 * A claim token that an outside writer's claim got from order_mail_log's trigger (migration 0009): the case
 * study's old workers, or anyone writing with its statements. Such a claim has no fence, so it counts as
 * dispatched; this service never takes it over, and the reconciliation sweep settles it by the policy once
 * it has been quiet (docs/adoption.md). 'legacy:adopted' marks the rows adoption brought in.
 */
export function isOutsideWriterToken(token: string): boolean {
  return token.startsWith('legacy:');
}

/**
 * The run a claim token names, with its namespace; null for a token that is not a run's (an operator's, an
 * outside writer's). A namespace name holds no '/', so the first one ends it; a workflow id may hold any.
 * The namespace matters: two namespaces may share one database, and a run is only known in its own.
 */
export function parseClaimToken(
  token: string,
): { namespace: string; workflowId: string; runId: string } | null {
  const first = token.indexOf('/');
  const last = token.lastIndexOf('/');
  if (token.startsWith('operator:') || first <= 0 || last <= first) return null;
  return {
    namespace: token.slice(0, first),
    workflowId: token.slice(first + 1, last),
    runId: token.slice(last + 1),
  };
}

/** One provider's part in judging an attempt that went to it (ClaimRequest.byProvider). */
export interface ProviderJudgement {
  idempotency: IdempotencyRetrySettings | null;
  /**
   * A closed run's attempt at this provider is handed back to verify ('verify-orphan'): the workflow handles
   * that, this provider's verification is on and the claimer has its verifier.
   */
  canVerify: boolean;
}

/** The key's window and whether to ask, for an attempt at `provider` (the row's). */
function judgementFor(request: ClaimRequest, provider: string | null): ProviderJudgement {
  const own = provider === null ? undefined : request.byProvider?.get(provider);
  return own ?? { idempotency: request.idempotency, canVerify: request.verifyDispatchedOrphans === true };
}

export interface ClaimRequest {
  orderId: string;
  claimToken: string;
  /** '<namespace>/<workflow id>/' of the claiming run. */
  workflowScope: string;
  /** The workflow's time when it scheduled this claim (see the contract above). */
  issuedAt: Date;
  /** What an attempt left unknown becomes (src/shared/unknownOutcome.ts decides, with these). */
  policy: UnknownOutcomePolicy;
  idempotency: IdempotencyRetrySettings | null;
  sendTimeoutMs: number;
  /** Written into the audit rows this claim may add (takeovers, settlements). */
  recordedBy: string;
  /**
   * The claimer can ask the provider (the workflow, with MAIL_VERIFY on): a closed run's dispatched attempt
   * that verification could decide is then handed back as 'verify-orphan' instead of settled by the policy.
   */
  verifyDispatchedOrphans?: boolean;
  /**
   * Failover: what the claimer knows of each provider by name. A dispatched attempt is judged by the provider
   * it went to, not the first configured: a key dedupes only at the provider that saw it, so its window is
   * that provider's, and an orphan is asked about only where that provider can be asked. A provider without
   * an entry (one provider, a test's fake) is judged by `idempotency` and `verifyDispatchedOrphans`.
   */
  byProvider?: ReadonlyMap<string, ProviderJudgement>;
  /**
   * MAIL_PROVIDERS in order (the claimer's configuration): each new attempt gets one of them, chosen by the
   * failover rule (src/shared/providerChoice.ts) and written with the claim. Empty or absent: no provider is
   * named (a test's fake transport) and the row's provider stays NULL.
   */
  providers?: readonly string[];
}

export type ClaimHow = 'first-claim' | 'reclaimed-failed' | 'took-over-undispatched' | 'own-claim';

/** Where the claimed attempt sends: the provider written into the row with the claim, and why. */
export interface ClaimedProvider {
  provider: string | null;
  providerChoice: string | null;
  /** Why, in words, for the log; absent for a claim that found its own (the row keeps only the reason). */
  providerExplanation?: string;
}

export type ClaimDecision =
  | ({ kind: 'claimed'; attempt: number; how: ClaimHow; resendCount: number } & ClaimedProvider)
  /**
   * 'resolved': an operator settled the row as sent (npm run ops -- resolve); 'legacy': the old system did
   * (an adopted row, or one its workers sent beside ours).
   */
  | {
      kind: 'already-sent';
      outcome: Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'>;
      attempts: number;
    }
  /**
   * Held by another workflow id, or last claimed by a run of this one whose claim is not older than this one:
   * this claim comes from a run that has been closed, or (equal times) cannot be ordered. Nothing changed.
   */
  | { kind: 'held-elsewhere'; holder: string; sameWorkflow: boolean }
  /**
   * A closed run of this workflow id dispatched `attempt` and never recorded it, and the provider can be asked
   * whether it arrived: nothing changed. The claimer asks (after the settle delay since that dispatch), settles
   * the attempt with the answer (settleVerifiedOrphan), then claims again.
   */
  | {
      kind: 'verify-orphan';
      attempt: number;
      holder: string;
      resendCount: number;
      sinceDispatchMs: number;
      /** Where the orphan went (the row's provider): it is asked there, on that provider's settle delay. */
      provider: string | null;
    }
  | { kind: 'order-not-found' };

/** An attempt whose unknown outcome this claim settled (a closed run's dispatched claim, or a deferred one). */
export interface SettledAttempt {
  attempt: number;
  holder: string;
  decision: UnknownOutcomeDecision;
}

export interface ClaimObserver {
  settled(settled: SettledAttempt): void;
  /** A pass found the row changed between its read and its statement, and looks again. */
  rowChanged(): void;
}

const NO_OBSERVER: ClaimObserver = { settled: () => undefined, rowChanged: () => undefined };

// Each pass reads the row and tries the one transition it allows; a concurrent change makes the statement
// change nothing and the next pass read again. Settling an orphan and then claiming takes three passes; the
// rest covers races.
export const MAX_CLAIM_PASSES = 8;

export class ClaimNotSettledError extends Error {
  override readonly name = 'ClaimNotSettledError';
  readonly code = 'ERR_CLAIM_NOT_SETTLED';
}

/**
 * Claims the order's mail for `request.claimToken`, or says why not. Throws ClaimNotSettledError when the row
 * kept changing for MAX_CLAIM_PASSES passes (the caller retries), and database errors as they come.
 */
export async function claimOrderMailRow(
  db: Database,
  request: ClaimRequest,
  observer: ClaimObserver = NO_OBSERVER,
): Promise<ClaimDecision> {
  const { orderId, claimToken, workflowScope, issuedAt } = request;
  for (let pass = 0; pass < MAX_CLAIM_PASSES; pass++) {
    // Most orders are claimed once: the first pass tries the insert before reading anything.
    const row = pass === 0 ? null : await readMailLog(db, orderId);
    if (row === null) {
      let inserted: boolean;
      const choice = await choose(db, request, []);
      try {
        inserted = await insertFirstClaim(db, request, choice);
      } catch (error) {
        // 23503 foreign_key_violation: the order does not exist. Nothing was written, nothing will be sent.
        if ((error as { code?: unknown }).code === '23503') return { kind: 'order-not-found' };
        throw error;
      }
      if (inserted) {
        return { kind: 'claimed', attempt: 1, how: 'first-claim', resendCount: 0, ...claimedAt(choice) };
      }
      if (pass > 0) observer.rowChanged();
      continue;
    }
    if (row.state === 'sending' && row.claimToken === claimToken) {
      return {
        kind: 'claimed',
        attempt: row.attempts,
        how: 'own-claim',
        resendCount: row.resendCount,
        provider: row.provider,
        providerChoice: row.providerChoice,
      };
    }
    if (row.state === 'sent') {
      return { kind: 'already-sent', outcome: sentOutcome(row), attempts: row.attempts };
    }
    if (row.state === 'sending' && !row.claimToken.startsWith(workflowScope)) {
      return { kind: 'held-elsewhere', holder: row.claimToken, sameWorkflow: false };
    }
    // From here on the row was last claimed by another claim (or our own earlier one, now settled); only a
    // strictly later claim may move it. A stale claim of a closed run must leave the open run's row alone.
    if (!(row.claimIssuedAt.getTime() < issuedAt.getTime())) {
      const sameWorkflow = row.claimToken.startsWith(workflowScope);
      return { kind: 'held-elsewhere', holder: row.claimToken, sameWorkflow };
    }

    if (row.state === 'failed') {
      const deferred = await deferredUnknownDecision(db, row, request);
      if (deferred !== null && deferred.decision.kind === 'policy') {
        if (await settleDeferredUnknown(db, row, request, deferred)) {
          observer.settled({
            attempt: row.attempts + 1,
            holder: row.claimToken,
            decision: deferred.decision,
          });
        } else observer.rowChanged();
        continue;
      }
      const choice = await choose(db, request, await earlierAttempts(db, row));
      const attempt = await reclaimFailed(db, row, request, choice);
      if (attempt !== null) {
        return {
          kind: 'claimed',
          attempt,
          how: 'reclaimed-failed',
          resendCount: row.resendCount,
          ...claimedAt(choice),
        };
      }
      observer.rowChanged();
      continue;
    }

    // 'sending', held by an earlier run of this workflow id: Temporal keeps at most one run of an id open,
    // so that run is closed (reset or terminated) and will never send or record this attempt.
    if (row.dispatchedAt === null) {
      // The abandoned attempt made no request: known not sent where it was to go.
      const abandoned: EarlierAttempt = {
        attempt: row.attempts,
        provider: row.provider,
        outcome: 'not_sent',
      };
      const choice = await choose(db, request, [...(await earlierAttempts(db, row)), abandoned]);
      const attempt = await takeOverUndispatched(db, row, request, choice);
      if (attempt !== null) {
        return {
          kind: 'claimed',
          attempt,
          how: 'took-over-undispatched',
          resendCount: row.resendCount,
          ...claimedAt(choice),
        };
      }
      observer.rowChanged();
      continue;
    }
    const judgement = judgementFor(request, row.provider);
    const facts = {
      dispatched: true,
      policy: request.policy,
      idempotency: judgement.idempotency,
      sinceKeyFirstDispatchMs: await timeSinceKeyFirstDispatch(db, orderId),
      // This run sends next, if the decision lets it.
      delayBeforeRetryMs: 0,
      sendTimeoutMs: request.sendTimeoutMs,
      anotherAttemptFollows: true,
      providerError: null,
    };
    if (judgement.canVerify) {
      // The policy is the price of not knowing; where the provider can say, ask it first. (A retry under the
      // idempotency key needs no asking: the provider dedupes it, and decideUnknownOutcome prefers it.)
      const step = decideUnknownOutcome({ ...facts, verification: { answer: null } });
      if (step.kind === 'verify') {
        const sinceDispatchMs = await timeSinceAttemptDispatch(db, {
          orderId,
          claimToken: row.claimToken,
          attempt: row.attempts,
        });
        if (sinceDispatchMs !== null) {
          const { attempts: attempt, claimToken: holder, resendCount, provider } = row;
          return { kind: 'verify-orphan', attempt, holder, resendCount, sinceDispatchMs, provider };
        }
        observer.rowChanged();
        continue;
      }
    }
    const decision = decideUnknownOutcome(facts);
    const note = `the run holding this claim closed after dispatching; ${describeUnknownDecision(decision, facts)}`;
    const fence = issuedBefore(issuedAt);
    if (await settleDispatchedOrphan(db, row, { decision, note, recordedBy: request.recordedBy, fence })) {
      observer.settled({ attempt: row.attempts, holder: row.claimToken, decision });
    } else observer.rowChanged();
  }
  throw new ClaimNotSettledError(
    `Could not settle the claim of order ${orderId} after ${MAX_CLAIM_PASSES} passes; retrying.`,
  );
}

function sentOutcome(row: MailLogRow): Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'> {
  return row.outcome as Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'>;
}

/**
 * The failover rule's answer for the attempt about to be claimed. The earlier attempts are the audit rows of
 * the current key, which only the statements that move the row write: the transition's fence (the row as read)
 * therefore also fences the history the choice was made from. Health is advisory and may change meanwhile.
 */
async function choose(
  db: Database,
  request: ClaimRequest,
  earlier: EarlierAttempt[],
): Promise<ProviderChoice> {
  const configured = request.providers ?? [];
  const standings = configured.length === 0 ? [] : await readProviderStandings(db);
  return chooseProvider({ configured, earlier, standings });
}

function claimedAt(choice: ProviderChoice): ClaimedProvider {
  return {
    provider: choice.provider,
    providerChoice: choice.provider === null ? null : choice.reason,
    providerExplanation: choice.explanation,
  };
}

/** The order's finished attempts under the row's current key, with the provider each went to. */
async function earlierAttempts(db: Database, row: MailLogRow): Promise<EarlierAttempt[]> {
  const { rows } = await runSql<EarlierAttempt>(
    db,
    sql`SELECT attempt, provider, outcome FROM order_mail_attempts
         WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount}
         ORDER BY attempt`,
  );
  return rows;
}

/** The row as a caller read it: what every transition's fence compares with. */
export interface SeenRow {
  orderId: string;
  state: MailLogRow['state'];
  claimToken: string;
  attempts: number;
  resendCount: number;
  dispatched: boolean;
}

export function seenRowOf(row: MailLogRow): SeenRow {
  const { orderId, state, claimToken, attempts, resendCount } = row;
  return { orderId, state, claimToken, attempts, resendCount, dispatched: row.dispatchedAt !== null };
}

/**
 * The fence every transition shares: the row is as it was read. Every column a transition depends on is in
 * it: nothing else changes while state, holder, attempt and key stay the same, except the dispatch fence
 * setting dispatched_at once.
 */
function asRead(row: MailLogRow | SeenRow): SqlFragment {
  const seen = 'dispatched' in row ? row : seenRowOf(row);
  return sql`log.order_id = ${seen.orderId} AND log.state = ${seen.state} AND log.claim_token = ${seen.claimToken}
    AND log.attempts = ${seen.attempts} AND log.resend_count = ${seen.resendCount}
    AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}`;
}

/** Only a later claim moves a row: a claim issued at the same time or earlier orders nothing. */
function issuedBefore(issuedAt: Date): SqlFragment {
  return sql`log.claim_issued_at < ${issuedAt}::timestamptz`;
}

/** The audit row of the attempt a statement settles, from its RETURNING columns (CTE `settled`). */
const AUDIT_OF_SETTLED = sql`INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at,
         dispatched_at, state, outcome, unknown_policy, error, recorded_by, provider, provider_choice)`;

async function insertFirstClaim(
  db: Database,
  request: ClaimRequest,
  choice: ProviderChoice,
): Promise<boolean> {
  const { provider, providerChoice } = claimedAt(choice);
  const { rowCount } = await runSql(
    db,
    sql`INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, provider, provider_choice)
        VALUES (${request.orderId}, 'sending', 1, ${request.claimToken}, ${request.issuedAt}, ${provider}, ${providerChoice})
        ON CONFLICT (order_id) DO NOTHING`,
  );
  return rowCount === 1;
}

/** A row that ended definitely-not-sent (or settled as failed): the next attempt, attempts + 1. */
async function reclaimFailed(
  db: Database,
  row: MailLogRow,
  request: ClaimRequest,
  choice: ProviderChoice,
): Promise<number | null> {
  const { provider, providerChoice } = claimedAt(choice);
  const { rows } = await runSql<{ attempts: number }>(
    db,
    sql`UPDATE order_mail_log AS log
           SET state = 'sending', attempts = log.attempts + 1, claim_token = ${request.claimToken},
               provider = ${provider}, provider_choice = ${providerChoice},
               claim_issued_at = ${request.issuedAt}, claimed_at = now(), dispatched_at = NULL, outcome = NULL,
               unknown_policy = NULL, verification = NULL, provider_message_id = NULL, http_status = NULL, last_error = NULL,
               updated_at = now()
         WHERE ${asRead(row)} AND ${issuedBefore(request.issuedAt)}
        RETURNING log.attempts`,
  );
  return rows[0]?.attempts ?? null;
}

/**
 * A closed run's claim that never dispatched: nothing reached the provider, so this run takes the claim over
 * and may send. The abandoned attempt gets its audit row.
 */
async function takeOverUndispatched(
  db: Database,
  row: MailLogRow,
  request: ClaimRequest,
  choice: ProviderChoice,
): Promise<number | null> {
  const note = `the run holding this claim closed before dispatching; taken over by ${request.claimToken}`;
  const { provider, providerChoice } = claimedAt(choice);
  const { rows } = await runSql<{ attempts: number }>(
    db,
    sql`WITH taken AS (
          UPDATE order_mail_log AS log
             SET claim_token = ${request.claimToken}, claim_issued_at = ${request.issuedAt},
                 provider = ${provider}, provider_choice = ${providerChoice},
                 attempts = log.attempts + 1, claimed_at = now(), updated_at = now()
           WHERE ${asRead(row)} AND ${issuedBefore(request.issuedAt)}
          RETURNING log.attempts
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT ${row.orderId}, ${row.attempts}, ${row.claimToken}, ${row.resendCount}, ${row.claimedAt}::timestamptz,
                 NULL, 'failed', 'not_sent', NULL, ${note}, ${request.recordedBy}, ${row.provider}, ${row.providerChoice}
            FROM taken
        )
        SELECT attempts FROM taken`,
  );
  return rows[0]?.attempts ?? null;
}

/**
 * A closed run's claim that HAD dispatched: its outcome is unknown, so `decision` (from
 * decideUnknownOutcome, with the provider's answer where it was asked) settles it, and the row and the audit
 * trail say so. `fence` adds the caller's own
 * precondition: for a claim, that it is later; for the sweep, that the row was not touched since it looked.
 */
async function settleDispatchedOrphan(
  db: Database,
  row: MailLogRow | SeenRow,
  input: { decision: UnknownOutcomeDecision; note: string; recordedBy: string; fence: SqlFragment },
): Promise<boolean> {
  const { decision } = input;
  const providerMessageId = decision.kind === 'verified-accepted' ? decision.providerMessageId : null;
  const { rowCount } = await runSql(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${decision.state}, outcome = ${decision.outcome}, unknown_policy = ${decision.unknownPolicy},
                 verification = ${decision.verification ?? null}, provider_message_id = ${providerMessageId},
                 last_error = ${input.note}, updated_at = now()
           WHERE ${asRead(row)} AND log.dispatched_at IS NOT NULL AND ${input.fence}
          RETURNING log.*
        ), audit AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, unknown_policy, verification, provider_message_id,
                                           error, recorded_by, provider, provider_choice)
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, dispatched_at, state, outcome,
                 unknown_policy, verification, provider_message_id, last_error, ${input.recordedBy}, provider,
                 provider_choice
            FROM settled
        )
        SELECT 1 FROM settled`,
  );
  return rowCount === 1;
}

export interface VerifiedOrphan {
  orderId: string;
  /** The closed run's claim token and the attempt it dispatched, as the claim's 'verify-orphan' named them. */
  holder: string;
  attempt: number;
  /** The settling run's '<namespace>/<workflow id>/' and its own token: the holder must be another run of it. */
  workflowScope: string;
  ownToken: string;
  /** The settling workflow's time (the claim's contract): only a claim later than the holder's settles it. */
  issuedAt: Date;
  answer: VerificationAnswer;
  policy: UnknownOutcomePolicy;
  recordedBy: string;
}

/**
 * Settles the dispatched attempt of a closed run with what the provider said of it (the claim handed it back
 * as 'verify-orphan'): found → sent/accepted, with the provider's id; not found (trusted) → failed/not_sent,
 * so the next claim sends it; inconclusive → the policy, recorded as tried. Fenced like every transition of
 * the claim: still that run's claim, at that attempt, dispatched, and claimed earlier than `issuedAt`.
 * 'changed' when the row moved on meanwhile (an operator, the sweep): then the next claim reads it as it is.
 */
export async function settleVerifiedOrphan(
  db: Database,
  input: VerifiedOrphan,
): Promise<{ kind: 'settled'; decision: UnknownOutcomeDecision } | { kind: 'changed' }> {
  const row = await readMailLog(db, input.orderId);
  if (
    row === null ||
    row.state !== 'sending' ||
    row.claimToken !== input.holder ||
    !row.claimToken.startsWith(input.workflowScope) ||
    row.claimToken === input.ownToken ||
    row.attempts !== input.attempt ||
    row.dispatchedAt === null
  ) {
    return { kind: 'changed' };
  }
  const facts = {
    dispatched: true,
    policy: input.policy,
    idempotency: null,
    sinceKeyFirstDispatchMs: null,
    delayBeforeRetryMs: 0,
    sendTimeoutMs: 0,
    anotherAttemptFollows: true,
    providerError: null,
    verification: { answer: input.answer },
  };
  const decision = decideUnknownOutcome(facts);
  if (decision.kind === 'verify') throw new Error('unreachable: verification answered, yet asked again');
  const note = `the run holding this claim closed after dispatching; ${describeUnknownDecision(decision, facts)}`;
  const settled = await settleDispatchedOrphan(db, row, {
    decision,
    note,
    recordedBy: input.recordedBy,
    fence: issuedBefore(input.issuedAt),
  });
  return settled ? { kind: 'settled', decision } : { kind: 'changed' };
}

interface DeferredUnknown {
  /** When the earliest request of the unknown attempts under the current key left. */
  dispatchedAt: Date;
  decision: UnknownOutcomeDecision;
  note: string;
}

/**
 * A failed row whose latest unknown outcome under the current key was left for a retry under the key
 * ('idempotent-retry'), then later attempts ended failed (not sent, rejected) or the run gave up. Whoever
 * claims it next must know whether the key's window still covers a request made now: if it does, sending
 * under the key is safe; if not, the provider would take the key as new, and the policy decides instead.
 * Null when there is nothing deferred.
 */
async function deferredUnknownDecision(
  db: Database,
  row: MailLogRow,
  request: ClaimRequest,
): Promise<DeferredUnknown | null> {
  const { rows } = await runSql<{ unknownPolicy: string; dispatchedAt: Date }>(
    db,
    sql`SELECT latest.unknown_policy AS "unknownPolicy",
               (SELECT min(dispatched_at) FROM order_mail_attempts
                 WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount} AND outcome = 'unknown')
               AS "dispatchedAt"
          FROM (SELECT unknown_policy FROM order_mail_attempts
                 WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount} AND outcome = 'unknown'
                 ORDER BY attempt DESC LIMIT 1) AS latest`,
  );
  const latest = rows[0];
  if (latest === undefined || latest.unknownPolicy !== 'idempotent-retry') return null;
  const facts = {
    dispatched: true,
    policy: request.policy,
    // The key's window at the provider the unknown attempt went to: the row is bound there (failover rule).
    idempotency: judgementFor(request, row.provider).idempotency,
    sinceKeyFirstDispatchMs: await timeSinceKeyFirstDispatch(db, row.orderId),
    delayBeforeRetryMs: 0,
    sendTimeoutMs: request.sendTimeoutMs,
    anotherAttemptFollows: true,
    providerError: null,
  };
  const decision = decideUnknownOutcome(facts);
  const note =
    `no request made by this attempt: an earlier request under this idempotency key (dispatched ` +
    `${latest.dispatchedAt.toISOString()}) may have been accepted, and the key's window no longer covers a ` +
    `retry; ${describeUnknownDecision(decision, facts)}`;
  return { dispatchedAt: latest.dispatchedAt, decision, note };
}

/**
 * Settles a deferred unknown by the policy, as a new attempt that makes no request: the row names the
 * policy and the request it is about (its dispatched_at), and the attempt's audit row says it sent nothing.
 * A 'failed' settlement is then reclaimed on the next pass and sent (under the same key: the policy says the
 * earlier request counts as not accepted); claim_issued_at stays as it was, so that reclaim is still later.
 */
async function settleDeferredUnknown(
  db: Database,
  row: MailLogRow,
  request: ClaimRequest,
  deferred: DeferredUnknown,
): Promise<boolean> {
  const { decision, note } = deferred;
  const { rowCount } = await runSql(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${decision.state}, outcome = ${decision.outcome}, unknown_policy = ${decision.unknownPolicy},
                 attempts = log.attempts + 1, claim_token = ${request.claimToken}, claimed_at = now(),
                 dispatched_at = ${deferred.dispatchedAt}::timestamptz, provider_message_id = NULL,
                 http_status = NULL, last_error = ${note}, updated_at = now()
           WHERE ${asRead(row)} AND ${issuedBefore(request.issuedAt)}
          RETURNING log.*
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, NULL, state, outcome, unknown_policy,
                 last_error, ${request.recordedBy}, provider, provider_choice
            FROM settled
        )
        SELECT 1 FROM settled`,
  );
  return rowCount === 1;
}

export type ClosedRunSettlement =
  { kind: 'released' | 'settled'; attempt: number; decision: UnknownOutcomeDecision } | { kind: 'changed' };

/**
 * The reconciliation sweep's transition (rule 3 without a successor): a 'sending' row whose holding run is
 * CLOSED (terminated, cancelled without cleanup, timed out) and that nobody claimed since. The caller asked
 * Temporal that the run is closed, and decided with decideUnknownOutcome, no attempt following; the fence is
 * the claim's: the row is still held by that run's token, at the same attempt, dispatched or not as the
 * caller read it. Never dispatched ('not-sent'): released as failed/not_sent, so the next claim (an
 * operator's retry or reset) takes it at once. Dispatched: settled as the decision says (with the provider's
 * answer where the sweep asked it, else by the policy).
 */
export async function settleClosedRunClaim(
  db: Database,
  seen: SeenRow,
  input: {
    decision: UnknownOutcomeDecision;
    /** What the provider said of the dispatched request, when the sweep asked (the decision is made with it). */
    answer?: VerificationAnswer;
    why: string;
    recordedBy: string;
  },
): Promise<ClosedRunSettlement> {
  const { decision } = input;
  const facts = {
    sinceKeyFirstDispatchMs: null,
    idempotency: null,
    ...(input.answer === undefined ? {} : { verification: { answer: input.answer } }),
  };
  if (decision.kind !== 'not-sent') {
    const settled =
      seen.dispatched &&
      (await settleDispatchedOrphan(db, seen, {
        decision,
        note: `${input.why} after dispatching; ${describeUnknownDecision(decision, facts)}`,
        recordedBy: input.recordedBy,
        fence: sql`TRUE`,
      }));
    return settled ? { kind: 'settled', attempt: seen.attempts, decision } : { kind: 'changed' };
  }
  const note = `${input.why} before dispatching: ${describeUnknownDecision(decision, facts)}; released, so the next claim sends it`;
  const { rowCount } = await runSql(
    db,
    sql`WITH released AS (
          UPDATE order_mail_log AS log
             SET state = 'failed', outcome = 'not_sent', unknown_policy = NULL, last_error = ${note},
                 updated_at = now()
           WHERE ${asRead(seen)} AND log.dispatched_at IS NULL
          RETURNING log.*
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, NULL, state, outcome, NULL,
                 last_error, ${input.recordedBy}, provider, provider_choice
            FROM released
        )
        SELECT 1 FROM released`,
  );
  return rowCount === 1 ? { kind: 'released', attempt: seen.attempts, decision } : { kind: 'changed' };
}
