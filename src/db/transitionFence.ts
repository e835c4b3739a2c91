// The fence every transition of the row shares (the claim's, a closed run's settlement, the sweep's): the row
// is exactly as the caller read it, and only a later claim moves it. Each statement puts these in its WHERE.
import type { MailLogRow } from './orderMailLog';
import { sql, type SqlFragment } from './sql';

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
export function asRead(row: MailLogRow | SeenRow): SqlFragment {
  const seen = 'dispatched' in row ? row : seenRowOf(row);
  return sql`log.order_id = ${seen.orderId} AND log.state = ${seen.state} AND log.claim_token = ${seen.claimToken}
    AND log.attempts = ${seen.attempts} AND log.resend_count = ${seen.resendCount}
    AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}`;
}

/** Only a later claim moves a row: a claim issued at the same time or earlier orders nothing. */
export function issuedBefore(issuedAt: Date): SqlFragment {
  return sql`log.claim_issued_at < ${issuedAt}::timestamptz`;
}

/**
 * The template that rendered a settled attempt's mail (migration 0061), from the row's dispatch columns: only
 * when this attempt dispatched, since a claim leaves the previous attempt's dispatch columns in place.
 */
export const TEMPLATE_OF_SETTLED = sql`CASE WHEN dispatched_at IS NOT NULL THEN dispatch_template_name END,
                 CASE WHEN dispatched_at IS NOT NULL THEN dispatch_template_sha256 END`;

/** The audit row of the attempt a statement settles, from its RETURNING columns (CTE `settled`). */
export const AUDIT_OF_SETTLED = sql`INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at,
         dispatched_at, state, outcome, unknown_policy, error, recorded_by, provider, provider_choice)`;
