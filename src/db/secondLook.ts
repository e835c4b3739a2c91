// THE SECOND LOOK (docs/design.md §4 rule 5, "The second look"; migration 0059): an attempt that the
// assume-sent policy settled as sent while verification was inconclusive is asked about once more by the sweep,
// while the provider's lookup still holds it. This module is the row's side of it: the candidates (one
// definition, SECOND_LOOK_FENCE, that the reading and both transitions share), and the transitions themselves,
// one statement each: `reopenAfterSecondLook`, the only statement that moves a `sent` row back for automation,
// and `recordSecondLookFound`. The decision (found / not found) is the evidence rules', asked by
// src/activities/secondLook.ts.
import type { DispatchedAttempt } from '../evidence/evidenceRules';
import type { Database } from './pool';
import { runSql, sql, type SqlFragment } from './sql';

/**
 * A row the second look may act on, whoever asks: settled sent by assume-sent with verification inconclusive,
 * never looked at a second time, with a recorded destination and send key (the lookup is built from them), not
 * a row the case study's writer ever claimed (its statements have no fence for a reopened row), and still
 * inside the time the look is allowed: `boundMs` after its dispatch, on Postgres's clock.
 */
function secondLookFence(boundMs: number): SqlFragment {
  return sql`log.state = 'sent' AND log.outcome = 'unknown' AND log.unknown_policy = 'assume-sent'
    AND log.verification = 'inconclusive' AND log.second_look IS NULL
    AND log.dispatched_at IS NOT NULL AND log.dispatch_provider IS NOT NULL AND log.dispatch_origin IS NOT NULL
    AND log.dispatch_send_key IS NOT NULL
    AND log.claim_token NOT LIKE 'legacy:%'
    AND NOT EXISTS (SELECT 1 FROM order_mail_attempts AS legacy
                     WHERE legacy.order_id = log.order_id AND legacy.claim_token LIKE 'legacy:%')
    AND now() < log.dispatched_at + ${boundMs}::bigint * interval '1 millisecond'`;
}

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

/**
 * One page of candidates that went to `provider`, oldest dispatch first (they leave the window first), after
 * `after`: a keyset on (dispatched_at, order_id), read from migration 0059's partial index.
 */
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

/** The candidate as read: the attempt the look was about, held by the same token. */
function asLooked(candidate: Pick<SecondLookCandidate, 'orderId' | 'claimToken' | 'attempts'>): SqlFragment {
  return sql`log.order_id = ${candidate.orderId} AND log.claim_token = ${candidate.claimToken}
    AND log.attempts = ${candidate.attempts}`;
}

/**
 * THE NAMED TRANSITION `reopenAfterSecondLook` (sent → failed): the provider's lookup, asked again, proved
 * with a witness that this attempt's request never reached it. One statement whose WHERE is the whole fence:
 * still the candidate as read (state, outcome, policy, verification inconclusive, never second-looked,
 * destination recorded, not the case study's writer's, inside the bound), the attempt the look was about,
 * no late answer of that attempt (a provider's answer that came after the policy would say otherwise), and the
 * order still confirmed. The row becomes failed/not_sent, verified by lookup, second_look 'reopened', and the
 * attempt gets its late answer (order_mail_late_answers, not_sent): the late verification. A claim then takes
 * it as after any verified not-sent attempt. True when it changed the row; run twice, the second changes none.
 */
export async function reopenAfterSecondLook(
  db: Database,
  candidate: Pick<SecondLookCandidate, 'orderId' | 'claimToken' | 'attempts'>,
  input: { boundMs: number; note: string; recordedBy: string },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`WITH reopened AS (
          UPDATE order_mail_log AS log
             SET state = 'failed', outcome = 'not_sent', unknown_policy = NULL, verification = 'lookup',
                 second_look = 'reopened', second_looked_at = now(), second_look_attempt = log.attempts,
                 last_error = ${input.note}, updated_at = now()
           WHERE ${asLooked(candidate)} AND ${secondLookFence(input.boundMs)}
             AND NOT EXISTS (SELECT 1 FROM order_mail_late_answers AS late
                              WHERE late.order_id = log.order_id AND late.attempt = log.attempts)
             AND EXISTS (SELECT 1 FROM order_mail_source.orders_for_mail AS o
                          WHERE o.order_id = log.order_id AND o.status = 'confirmed')
          RETURNING log.order_id, log.attempts
        ), late AS (
          INSERT INTO order_mail_late_answers (order_id, attempt, outcome, note, recorded_by)
          SELECT order_id, attempts, 'not_sent', ${input.note}, ${input.recordedBy} FROM reopened
        )
        SELECT 1 FROM reopened`,
  );
  return rowCount === 1;
}

/**
 * The second look found the attempt at the provider: the row stays sent (now known, not assumed), the look is
 * done (second_look 'found'), and the attempt's late answer says accepted, with the provider's id.
 */
export async function recordSecondLookFound(
  db: Database,
  candidate: Pick<SecondLookCandidate, 'orderId' | 'claimToken' | 'attempts'>,
  input: { boundMs: number; providerMessageId: string | null; note: string; recordedBy: string },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`WITH looked AS (
          UPDATE order_mail_log AS log
             SET second_look = 'found', second_looked_at = now(), second_look_attempt = log.attempts,
                 updated_at = now()
           WHERE ${asLooked(candidate)} AND ${secondLookFence(input.boundMs)}
          RETURNING log.order_id, log.attempts
        ), late AS (
          INSERT INTO order_mail_late_answers (order_id, attempt, outcome, provider_message_id, note, recorded_by)
          SELECT order_id, attempts, 'accepted', ${input.providerMessageId}, ${input.note}, ${input.recordedBy}
            FROM looked
          ON CONFLICT (order_id, attempt) DO NOTHING
        )
        SELECT 1 FROM looked`,
  );
  return rowCount === 1;
}

/**
 * Rows the second look reopened that no claim has taken since (the sweep's start of their mail was lost, or
 * its run closed before claiming): the sweep starts them again, idempotently.
 */
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
 * Attempts the assume-failed policy settled with verification inconclusive, whose row was then sent and
 * accepted under the same key by a later attempt to the same provider, not asked about yet (no late answer),
 * not the case study's writer's, inside the window (`boundMs` after that attempt's dispatch), oldest first.
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

/**
 * What the dual found, kept once as the policy's attempt's late answer: accepted (the policy's duplicate) or
 * not sent. True when this call recorded it (the first), so the duplicate is counted once.
 */
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
