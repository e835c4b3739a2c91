// A failed row whose latest unknown outcome was left for a retry under the idempotency key: whether the key's
// window still covers a request made now, and if not, how the policy settles it (its statement is
// settleDeferredUnknown, src/mailRow/statements.ts). Part of the claim, which asks it before it reclaims.
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type UnknownOutcomeDecision,
} from '../shared/unknownOutcome';
import { deferredUnknownFacts } from '../shared/unknownOutcomeFacts';
import { judgementFor, type ClaimRequest } from './claimRequest';
import { timeSinceKeyFirstDispatch, type MailLogRow } from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql } from './sql';

export interface DeferredUnknown {
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
export async function deferredUnknownDecision(
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
  const facts = deferredUnknownFacts({
    policy: request.policy,
    // The key's window at the provider the unknown attempt went to: the row is bound there (failover rule).
    idempotency: judgementFor(request, row.provider).idempotency,
    sinceKeyFirstDispatchMs: await timeSinceKeyFirstDispatch(db, row.orderId),
    sendTimeoutMs: request.sendTimeoutMs,
  });
  const decision = decideUnknownOutcome(facts);
  const note =
    `no request made by this attempt: an earlier request under this idempotency key (dispatched ` +
    `${latest.dispatchedAt.toISOString()}) may have been accepted, and the key's window no longer covers a ` +
    `retry; ${describeUnknownDecision(decision, facts)}`;
  return { dispatchedAt: latest.dispatchedAt, decision, note };
}
