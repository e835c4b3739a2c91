// THE CLAIM (docs: the row's state machine, rules 1 and 3): who may send an order's mail, and every
// transition that hands the row to a new attempt or settles one that a closed run left behind. Each
// transition is one statement whose WHERE clause is its fence: the row exactly as this pass read it.
// The claim activity (src/activities/claimOrderMail.ts) calls claimOrderMailRow with its run's identity; the
// property test (test/property) calls it with its racers'; the reconciliation sweep settles orphans with
// settleClosedRunClaim (closedRunAttempt.ts).
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
//
// Beside it: the request and decision types (claimRequest.ts), claim tokens (claimToken.ts), the fence every
// transition shares (transitionFence.ts), a closed run's dispatched attempt (closedRunAttempt.ts), and a
// deferred unknown under the key (deferredUnknown.ts).
import type { LogOutcome } from '../shared/mailOutcome';
import { decideUnknownOutcome, describeUnknownDecision } from '../shared/unknownOutcome';
import { orphanFactsAtClaim } from '../shared/unknownOutcomeFacts';
import type { EarlierAttempt, ProviderChoice } from '../shared/providerChoice';
import { judgementFor, type ClaimDecision, type ClaimObserver, type ClaimRequest } from './claimRequest';
import { settleDispatchedOrphan } from './closedRunAttempt';
import { deferredUnknownDecision, settleDeferredUnknown } from './deferredUnknown';
import { choose, claimedAt, earlierAttempts, isNoProvider, noProvider } from './claimProviderChoice';
import {
  readMailLog,
  timeSinceAttemptDispatch,
  timeSinceKeyFirstDispatch,
  type MailLogRow,
} from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql } from './sql';
import { AUDIT_OF_SETTLED, asRead, issuedBefore } from './transitionFence';

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
      const choice = await choose(db, request, []);
      if (isNoProvider(choice)) return noProvider(choice);
      const inserted = await insertFirstClaim(db, request, choice);
      // The order is not in the contract's view: nothing was written, nothing will be sent.
      if (inserted === 'order-not-found') return { kind: 'order-not-found' };
      if (inserted === 'inserted') {
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
      // Before anything else: an unknown bound to a provider this claimer lacks is not its to settle either.
      const choice = await choose(db, request, await earlierAttempts(db, row));
      if (isNoProvider(choice)) return noProvider(choice);
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
      if (isNoProvider(choice)) return noProvider(choice);
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
    // An orphan: judged by the provider it went to. The policy is the price of not knowing; where that
    // provider can say, it is asked first. (A retry under the idempotency key needs no asking: the provider
    // dedupes it, and decideUnknownOutcome prefers it.) Where that provider is not configured here, this claimer
    // can neither ask it nor judge its key: the order fails at once, for a worker that has it to settle.
    const dispatched: EarlierAttempt = { attempt: row.attempts, provider: row.provider, outcome: 'unknown' };
    const bound = await choose(db, request, [...(await earlierAttempts(db, row)), dispatched]);
    if (isNoProvider(bound)) return noProvider(bound);
    const judgement = judgementFor(request, row.provider);
    const facts = orphanFactsAtClaim({
      policy: request.policy,
      idempotency: judgement.idempotency,
      sinceKeyFirstDispatchMs: await timeSinceKeyFirstDispatch(db, orderId),
      sendTimeoutMs: request.sendTimeoutMs,
      canVerify: judgement.canVerify,
    });
    const decision = decideUnknownOutcome(facts);
    if (decision.kind === 'verify') {
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

async function insertFirstClaim(
  db: Database,
  request: ClaimRequest,
  choice: ProviderChoice,
): Promise<'inserted' | 'exists' | 'order-not-found'> {
  const { provider, providerChoice } = claimedAt(choice);
  // The order is checked through the contract in the same statement (no foreign key to the shop's table since
  // migration 0063): a row is inserted only for an order the shop's view shows.
  const { rows } = await runSql<{ found: boolean; inserted: boolean }>(
    db,
    sql`WITH found AS (
          SELECT EXISTS (SELECT 1 FROM order_mail_source.orders_for_mail WHERE order_id = ${request.orderId}) AS found
        ), inserted AS (
          INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, provider, provider_choice)
          SELECT ${request.orderId}::bigint, 'sending', 1, ${request.claimToken}::text, ${request.issuedAt}::timestamptz,
                 ${provider}::text, ${providerChoice}::text
            FROM found WHERE found.found
          ON CONFLICT (order_id) DO NOTHING
          RETURNING 1
        )
        SELECT found.found, EXISTS (SELECT 1 FROM inserted) AS inserted FROM found`,
  );
  const result = rows[0]!;
  if (result.inserted) return 'inserted';
  return result.found ? 'exists' : 'order-not-found';
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
