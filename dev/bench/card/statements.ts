// The card's two statements on the product's order_mail_log: the claim (insert, else take a failed row back)
// and the record. No claim fence beyond `state`, no dispatch fence, no audit row (docs/benchmarks.md, "card").
import type { Database } from '../../../src/db/pool';

// The card has no fence before its request, so its claim counts as the request leaving: the table accepts an
// 'accepted' or 'unknown' outcome only on a row with dispatched_at (migration 0003), as the trigger of 0009
// does for any writer without a fence.
const FIRST_CLAIM = `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, dispatched_at)
  VALUES ($1, 'sending', 1, $2, now(), now())
  ON CONFLICT (order_id) DO NOTHING`;

const RECLAIM_FAILED = `UPDATE order_mail_log
     SET state = 'sending', attempts = attempts + 1, claim_token = $2, claim_issued_at = now(), claimed_at = now(),
         dispatched_at = now(), outcome = NULL, unknown_policy = NULL, verification = NULL,
         provider_message_id = NULL, http_status = NULL, last_error = NULL, updated_at = now()
   WHERE order_id = $1 AND state = 'failed'
  RETURNING attempts`;

const RECORD = `UPDATE order_mail_log
     SET state = $3, outcome = $4, unknown_policy = $5, provider_message_id = $6, http_status = $7,
         last_error = $8, updated_at = now()
   WHERE order_id = $1 AND claim_token = $2 AND state = 'sending'`;

/** The attempt claimed, or null: the row is sending or sent (someone has it, or had it). */
export async function cardClaim(
  db: Database,
  orderId: string,
  claimToken: string,
): Promise<{ attempt: number } | null> {
  const inserted = await db.query(FIRST_CLAIM, [orderId, claimToken]);
  if (inserted.rowCount === 1) return { attempt: 1 };
  const { rows } = await db.query<{ attempts: number }>(RECLAIM_FAILED, [orderId, claimToken]);
  return rows[0] === undefined ? null : { attempt: rows[0].attempts };
}

export interface CardOutcome {
  state: 'sent' | 'failed';
  outcome: 'accepted' | 'unknown' | 'rejected' | 'not_sent';
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
}

/** True when this claim's row was settled; false when it was not (nothing the card acts on). */
export async function cardRecord(
  db: Database,
  orderId: string,
  claimToken: string,
  outcome: CardOutcome,
): Promise<boolean> {
  // The card counts an unknown (a timeout) as sent: the case study's default (docs/design.md §1).
  const unknownPolicy = outcome.outcome === 'unknown' ? 'assume-sent' : null;
  const { rowCount } = await db.query(RECORD, [
    orderId,
    claimToken,
    outcome.state,
    outcome.outcome,
    unknownPolicy,
    outcome.providerMessageId,
    outcome.httpStatus,
    outcome.error,
  ]);
  return rowCount === 1;
}
