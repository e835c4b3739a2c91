// A module shaped like the product's (the capture test counts this folder as product code): it writes the
// mail row itself instead of through src/mailRow/statements.ts, as a new file of src/ might.
import type { Database } from '../../../src/db/pool';

export async function rogueClaim(db: Database, orderId: string): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at)
     VALUES ($1, 'sending', 1, 'default/rogue/run', now())`,
    [orderId],
  );
  return rowCount;
}

export async function rogueAuditInTransaction(db: Database, orderId: string): Promise<void> {
  await db.transaction(async (client) => {
    await client.query(
      `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                        recorded_by)
       VALUES ($1, 1, 'default/rogue/run', 0, now(), 'failed', 'not_sent', 'rogue')`,
      [orderId],
    );
  });
}
