// THE DISPATCH FENCE (docs: the row's state machine, rule 2), next to the send that it guards
// (sendOrderMail.ts). Before any byte of the request leaves, the attempt marks itself dispatched; only the
// attempt that holds the claim and has not dispatched yet gets through. Whoever does not must make no request.
// Its statement is markDispatched in src/mailRow/statements.ts; this says why it refused.
import type { Database } from '../db/pool';
import { runSql, sql } from '../db/sql';
import type { SendDestination } from '../evidence/destination';
import * as rowStatements from '../mailRow/statements';

/** 'held': an operator's hold covers this attempt's provider (migration 0060); no request, nothing dispatched. */
export type DispatchFenceResult = 'dispatched' | 'already-dispatched' | 'claim-lost' | 'held';

/** What the request about to leave is: where it goes, the key it carries, how long it may take at most. */
export interface DispatchRecord {
  /** Null for a transport that names no destination (a test's fake): a lookup about it is inconclusive. */
  destination: SendDestination | null;
  sendKey: string;
  /** The template the request's mail was rendered from (its name and SHA-256), recorded with the attempt. */
  template?: { name: string; sha256: string } | null;
  /** Temporal's timeout for this execution of the send activity. */
  sendTimeoutMs: number;
}

/**
 * One statement, fenced by (claim token, attempt, 'sending', not yet dispatched, no hold on its provider). A 'sending' row whose
 * dispatched_at stays NULL is therefore known never to have reached the provider, which is what lets a newer
 * run take it over and the record call an attempt that ended before it "not sent". The same statement records
 * where the request goes (migrations 0015, 0052): whoever asks about it later asks there (src/evidence/).
 * The hold is read by this same statement, so no request passes a hold that committed before it began; `ops
 * hold` waits out the statements that began before (src/ops/sendHold.ts).
 */
export async function markDispatched(
  db: Database,
  input: {
    orderId: string;
    claimToken: string;
    attempt: number;
    dispatch: DispatchRecord;
    /** The provider the claim chose for this attempt (the row's), which this request goes through. */
    provider?: string | null;
  },
): Promise<DispatchFenceResult> {
  const { destination, sendKey, sendTimeoutMs, template } = input.dispatch;
  const provider = input.provider ?? null;
  const passed = await rowStatements.markDispatched(db, {
    orderId: input.orderId,
    claimToken: input.claimToken,
    attempt: input.attempt,
    provider,
    dispatch: {
      provider: destination?.provider ?? null,
      origin: destination?.origin ?? null,
      scope: destination?.scope ?? null,
      credentialFingerprint: destination?.credentialFingerprint ?? null,
      account: destination?.account ?? null,
      sendKey,
      sendTimeoutMs,
      templateName: template?.name ?? null,
      templateSha256: template?.sha256 ?? null,
    },
  });
  if (passed) return 'dispatched';
  // The fence said no. Only to report why: whatever this read sees, no request is made.
  const { rows } = await runSql<{ dispatched: boolean; held: boolean }>(
    db,
    sql`SELECT dispatched_at IS NOT NULL AS dispatched,
               EXISTS (SELECT 1 FROM order_mail_send_holds AS hold
                        WHERE hold.scope = '*' OR hold.scope = ${input.provider ?? null}::text) AS held
          FROM order_mail_log
         WHERE order_id = ${input.orderId} AND claim_token = ${input.claimToken} AND attempts = ${input.attempt}
           AND state = 'sending'`,
  );
  const row = rows[0];
  if (row === undefined) return 'claim-lost';
  return !row.dispatched && row.held ? 'held' : 'already-dispatched';
}

/**
 * The provider the claim chose for this attempt (failover), read before the send picks its transport; null
 * when the row names none (a fake transport) or the attempt is no longer this run's (the fence then refuses).
 */
export async function readAttemptProvider(
  db: Database,
  input: { orderId: string; claimToken: string; attempt: number },
): Promise<string | null> {
  const { rows } = await runSql<{ provider: string | null }>(
    db,
    sql`SELECT provider FROM order_mail_log
         WHERE order_id = ${input.orderId} AND claim_token = ${input.claimToken} AND attempts = ${input.attempt}
           AND state = 'sending'`,
  );
  return rows[0]?.provider ?? null;
}
