// The one read a stopping worker makes before it lets go of its workflow tasks: which of the sends it ran
// are still not recorded (src/unrecordedSendTracker.ts).
import type { Database } from './pool';

export interface SendAttemptKey {
  orderId: string;
  claimToken: string;
  attempt: number;
}

/** How many of `sends` still have their row in 'sending' under their own claim and attempt. */
export async function countStillSending(db: Database, sends: readonly SendAttemptKey[]): Promise<number> {
  if (sends.length === 0) return 0;
  const { rows } = await db.query<{ left: number }>(
    `SELECT count(*)::int AS left FROM order_mail_log AS log
       JOIN unnest($1::bigint[], $2::text[], $3::int[]) AS send(order_id, claim_token, attempt)
         ON log.order_id = send.order_id AND log.claim_token = send.claim_token AND log.attempts = send.attempt
      WHERE log.state = 'sending'`,
    [
      sends.map((send) => send.orderId),
      sends.map((send) => send.claimToken),
      sends.map((send) => send.attempt),
    ],
  );
  return rows[0]?.left ?? 0;
}
