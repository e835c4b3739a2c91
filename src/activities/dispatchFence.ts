// The dispatch fence (docs/design.md §4 rule 2): why markDispatched refused.
import type { Database } from '../db/pool';
import { runSql, sql } from '../db/sql';
import type { SendDestination } from '../evidence/destination';
import * as rowStatements from '../mailRow/statements';

/** 'held': an operator's hold covers this attempt's provider (migration 0060); no request. */
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

/** One statement fenced on the row as held and any hold; records where the request goes. */
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
