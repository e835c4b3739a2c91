// The second look's reads, by the fence both its transitions share (secondLookFence): docs/design.md "The
// second look". Its statements are in src/mailRow/statements.ts.
import type { DispatchedAttempt } from '../evidence/evidenceRules';
import type { Database } from './pool';
import { secondLookFence } from '../mailRow/statements';
import { runSql, sql } from './sql';

/** Where a page of candidates ended: the last row's dispatch (microseconds since the epoch) and order id. */
export interface SecondLookCursor {
  dispatchedAtMicros: string;
  orderId: string;
}

export interface SecondLookCandidate {
  /** The fence's view of the row: the transition changes it only if it is still this attempt. */
  orderId: string;
  claimToken: string;
  attempts: number;
  /** The attempt as the evidence rules judge it, and Postgres's now() read with it. */
  read: { attempt: DispatchedAttempt; recordedSendKey: string; now: Date };
  cursor: SecondLookCursor;
}

/** A page of candidates at `provider`, oldest dispatch first (keyset, migration 0059's partial index). */
export async function findSecondLookCandidates(
  db: Database,
  input: { provider: string; boundMs: number; after: SecondLookCursor | null; limit: number },
): Promise<SecondLookCandidate[]> {
  const after = input.after;
  const { rows } = await runSql<{
    orderId: string;
    claimToken: string;
    attempts: number;
    dispatchedAt: Date;
    dispatchedAtMicros: string;
    origin: string;
    scope: string | null;
    credentialFingerprint: string | null;
    account: string | null;
    sendKey: string;
    sendTimeoutMs: number | null;
    keyFirstDispatchedAt: Date;
    now: Date;
  }>(
    db,
    sql`SELECT log.order_id::text AS "orderId", log.claim_token AS "claimToken", log.attempts,
               log.dispatched_at AS "dispatchedAt",
               (extract(epoch FROM log.dispatched_at) * 1000000)::bigint::text AS "dispatchedAtMicros",
               log.dispatch_origin AS origin, log.dispatch_scope AS scope,
               log.dispatch_credential_fingerprint AS "credentialFingerprint", log.dispatch_account AS account,
               log.dispatch_send_key AS "sendKey", log.dispatch_send_timeout_ms AS "sendTimeoutMs",
               LEAST(log.dispatched_at,
                     (SELECT min(earlier.dispatched_at) FROM order_mail_attempts AS earlier
                       WHERE earlier.order_id = log.order_id AND earlier.resend_count = log.resend_count))
                 AS "keyFirstDispatchedAt",
               now() AS now
          FROM order_mail_log AS log
         WHERE ${secondLookFence(input.boundMs)} AND log.dispatch_provider = ${input.provider}
           AND (${after === null}
                OR (log.dispatched_at, log.order_id) >
                   (to_timestamp(${after?.dispatchedAtMicros ?? '0'}::numeric / 1000000), ${after?.orderId ?? '0'}::bigint))
         ORDER BY log.dispatched_at, log.order_id
         LIMIT ${input.limit}`,
  );
  return rows.map((row) => ({
    orderId: row.orderId,
    claimToken: row.claimToken,
    attempts: row.attempts,
    read: {
      attempt: {
        orderId: row.orderId,
        attempt: row.attempts,
        sendKey: row.sendKey,
        destination: {
          provider: input.provider,
          origin: row.origin,
          scope: row.scope,
          credentialFingerprint: row.credentialFingerprint,
          account: row.account,
        },
        dispatchedAt: row.dispatchedAt,
        sendTimeoutMs: row.sendTimeoutMs,
        keyFirstDispatchedAt: row.keyFirstDispatchedAt,
      },
      recordedSendKey: row.sendKey,
      now: row.now,
    },
    cursor: { dispatchedAtMicros: row.dispatchedAtMicros, orderId: row.orderId },
  }));
}

/** Reopened rows no claim took since (their start was lost): the sweep starts them again. */
export async function findReopenedNotClaimed(db: Database, limit: number): Promise<string[]> {
  const { rows } = await runSql<{ orderId: string }>(
    db,
    sql`SELECT order_id::text AS "orderId" FROM order_mail_log
         WHERE second_look = 'reopened' AND state = 'failed' AND attempts = second_look_attempt
         ORDER BY second_looked_at, order_id
         LIMIT ${limit}`,
  );
  return rows.map((row) => row.orderId);
}

/** An attempt the assume-failed policy re-sent, whose re-send was accepted: asked about once (the dual). */
export interface PolicyResend {
  orderId: string;
  /** The attempt the policy settled as failed without evidence. */
  attempt: number;
  /** The accepted re-send, as the evidence rules judge it, and Postgres's now() read with it. */
  resend: DispatchedAttempt;
  now: Date;
}

/**
 * The dual under assume-failed: policy-settled attempts whose re-send under the same key was accepted at the
 * same provider, not yet asked about, inside the window, oldest first.
 */
export async function findPolicyResends(
  db: Database,
  input: { provider: string; boundMs: number; limit: number },
): Promise<PolicyResend[]> {
  const { rows } = await runSql<{
    orderId: string;
    attempt: number;
    resendAttempt: number;
    dispatchedAt: Date;
    origin: string;
    scope: string | null;
    credentialFingerprint: string | null;
    account: string | null;
    sendKey: string;
    sendTimeoutMs: number | null;
    keyFirstDispatchedAt: Date;
    now: Date;
  }>(
    db,
    sql`SELECT a.order_id::text AS "orderId", a.attempt, log.attempts AS "resendAttempt",
               log.dispatched_at AS "dispatchedAt", log.dispatch_origin AS origin, log.dispatch_scope AS scope,
               log.dispatch_credential_fingerprint AS "credentialFingerprint", log.dispatch_account AS account,
               log.dispatch_send_key AS "sendKey", log.dispatch_send_timeout_ms AS "sendTimeoutMs",
               a.dispatched_at AS "keyFirstDispatchedAt", now() AS now
          FROM order_mail_attempts AS a
          JOIN order_mail_log AS log ON log.order_id = a.order_id
         WHERE a.outcome = 'unknown' AND a.unknown_policy = 'assume-failed' AND a.verification = 'inconclusive'
           AND a.dispatched_at IS NOT NULL AND a.provider = ${input.provider}
           AND log.state = 'sent' AND log.outcome = 'accepted' AND log.resend_count = a.resend_count
           AND log.attempts > a.attempt AND log.dispatch_provider = ${input.provider}
           AND log.dispatch_origin IS NOT NULL AND log.dispatch_send_key IS NOT NULL
           AND log.claim_token NOT LIKE 'legacy:%'
           AND NOT EXISTS (SELECT 1 FROM order_mail_late_answers AS late
                            WHERE late.order_id = a.order_id AND late.attempt = a.attempt)
           AND now() < a.dispatched_at + ${input.boundMs}::bigint * interval '1 millisecond'
         ORDER BY a.dispatched_at, a.order_id
         LIMIT ${input.limit}`,
  );
  return rows.map((row) => ({
    orderId: row.orderId,
    attempt: row.attempt,
    resend: {
      orderId: row.orderId,
      attempt: row.resendAttempt,
      sendKey: row.sendKey,
      destination: {
        provider: input.provider,
        origin: row.origin,
        scope: row.scope,
        credentialFingerprint: row.credentialFingerprint,
        account: row.account,
      },
      dispatchedAt: row.dispatchedAt,
      sendTimeoutMs: row.sendTimeoutMs,
      keyFirstDispatchedAt: row.keyFirstDispatchedAt,
    },
    now: row.now,
  }));
}

/** Keeps the dual's finding once as a late answer; true when this call recorded it (counted once). */
export async function recordPolicyResendLook(
  db: Database,
  input: { orderId: string; attempt: number; duplicate: boolean; note: string; recordedBy: string },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`INSERT INTO order_mail_late_answers (order_id, attempt, outcome, note, recorded_by)
        VALUES (${input.orderId}, ${input.attempt}, ${input.duplicate ? 'accepted' : 'not_sent'}, ${input.note},
                ${input.recordedBy})
        ON CONFLICT (order_id, attempt) DO NOTHING`,
  );
  return rowCount === 1;
}
