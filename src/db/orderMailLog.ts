// Reads of order_mail_log and order_mail_attempts; nothing here writes (src/mailRow/statements.ts does).
import type { AttemptOutcome, LogOutcome, UnknownSettlement } from '../shared/mailOutcome';
import type { DispatchedAttempt } from '../evidence/evidenceRules';
import type { VerificationRecord } from '../shared/unknownOutcome';
import type { Database } from './pool';
import { runSql, sql } from './sql';

export type MailLogState = 'sending' | 'sent' | 'failed';

export interface MailLogRow {
  orderId: string;
  state: MailLogState;
  attempts: number;
  claimToken: string;
  /** When the holding run issued its claim, on the workflow's (server's) clock: orders runs of one id. */
  claimIssuedAt: Date;
  claimedAt: Date;
  /** Deliberate re-sends so far; part of the send key (src/mail/sendKey.ts). */
  resendCount: number;
  dispatchedAt: Date | null;
  outcome: LogOutcome | null;
  unknownPolicy: UnknownSettlement | null;
  /** How an unknown outcome was verified with the provider (migration 0007); null when it was not. */
  verification: VerificationRecord | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  lastError: string | null;
  /** The send key the dispatched request carried, as the fence recorded it (migration 0015). */
  dispatchSendKey: string | null;
  /** The send activity's timeout of the execution that dispatched it, as the fence recorded it. */
  dispatchSendTimeoutMs: number | null;
  /** The provider the claim chose for this attempt, and why (migration 0045); null before it or for a fake. */
  provider: string | null;
  providerChoice: string | null;
  /** The second look (migration 0059): 'reopened', 'found' or null; when, and about which attempt. */
  secondLook: 'reopened' | 'found' | null;
  secondLookedAt: Date | null;
  secondLookAttempt: number | null;
  createdAt: Date;
  updatedAt: Date;
}

const ROW_COLUMNS = sql`order_id::text AS "orderId", state, attempts, claim_token AS "claimToken",
  claim_issued_at AS "claimIssuedAt", claimed_at AS "claimedAt", resend_count AS "resendCount",
  dispatched_at AS "dispatchedAt", outcome, unknown_policy AS "unknownPolicy", verification,
  provider_message_id AS "providerMessageId", http_status AS "httpStatus", last_error AS "lastError",
  dispatch_send_key AS "dispatchSendKey", dispatch_send_timeout_ms AS "dispatchSendTimeoutMs",
  provider, provider_choice AS "providerChoice", second_look AS "secondLook", second_looked_at AS "secondLookedAt",
  second_look_attempt AS "secondLookAttempt", created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function readMailLog(db: Database, orderId: string): Promise<MailLogRow | null> {
  const { rows } = await runSql<MailLogRow>(
    db,
    sql`SELECT ${ROW_COLUMNS} FROM order_mail_log WHERE order_id = ${orderId}`,
  );
  return rows[0] ?? null;
}

export interface AttemptRow {
  attempt: number;
  claimToken: string;
  resendCount: number;
  claimedAt: Date;
  dispatchedAt: Date | null;
  finishedAt: Date;
  state: 'sent' | 'failed';
  outcome: AttemptOutcome;
  unknownPolicy: UnknownSettlement | null;
  verification: VerificationRecord | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
  recordedBy: string;
  /** The provider the claim chose for it, and why (migration 0045); null before failover or for a fake. */
  provider?: string | null;
  providerChoice?: string | null;
  /** A late answer (order_mail_late_answers), null when none; 'legacy': the old system's statements. */
  late: {
    outcome: 'accepted' | 'rejected' | 'not_sent' | 'legacy';
    providerMessageId: string | null;
    httpStatus: number | null;
    note: string | null;
    recordedAt: Date;
    recordedBy: string;
  } | null;
}

export async function listAttempts(db: Database, orderId: string): Promise<AttemptRow[]> {
  const { rows } = await runSql<AttemptRow>(
    db,
    sql`SELECT audit.attempt, audit.claim_token AS "claimToken", audit.resend_count AS "resendCount",
               audit.claimed_at AS "claimedAt", audit.dispatched_at AS "dispatchedAt",
               audit.finished_at AS "finishedAt", audit.state, audit.outcome,
               audit.unknown_policy AS "unknownPolicy", audit.verification, audit.provider_message_id AS "providerMessageId",
               audit.http_status AS "httpStatus", audit.error, audit.recorded_by AS "recordedBy",
               audit.provider, audit.provider_choice AS "providerChoice",
               CASE WHEN late.outcome IS NULL THEN NULL ELSE json_build_object(
                 'outcome', late.outcome, 'providerMessageId', late.provider_message_id,
                 'httpStatus', late.http_status, 'note', late.note, 'recordedAt', late.recorded_at,
                 'recordedBy', late.recorded_by)
               END AS late
          FROM order_mail_attempts AS audit
          LEFT JOIN order_mail_late_answers AS late USING (order_id, attempt)
         WHERE audit.order_id = ${orderId} ORDER BY audit.attempt, audit.id`,
  );
  // json_build_object gives the time as text.
  return rows.map((row) =>
    row.late === null ? row : { ...row, late: { ...row.late, recordedAt: new Date(row.late.recordedAt) } },
  );
}

/**
 * Milliseconds since the first request under the row's current key (any run, any attempt), on Postgres's
 * clock; null when none dispatched. The provider's window counts from it.
 */
export async function timeSinceKeyFirstDispatch(db: Database, orderId: string): Promise<number | null> {
  const { rows } = await runSql<{ sinceMs: number | null }>(
    db,
    sql`SELECT round(extract(epoch FROM now() - LEAST(log.dispatched_at,
                 (SELECT min(attempt.dispatched_at) FROM order_mail_attempts AS attempt
                   WHERE attempt.order_id = log.order_id AND attempt.resend_count = log.resend_count))
               ) * 1000)::float8 AS "sinceMs"
          FROM order_mail_log AS log WHERE log.order_id = ${orderId}`,
  );
  return rows[0]?.sinceMs ?? null;
}

/** Milliseconds since this attempt's request left (Postgres's clock); null unless still its, dispatched. */
export async function timeSinceAttemptDispatch(
  db: Database,
  attempt: { orderId: string; claimToken: string; attempt: number },
): Promise<number | null> {
  const { rows } = await runSql<{ sinceMs: number }>(
    db,
    sql`SELECT round(extract(epoch FROM now() - log.dispatched_at) * 1000)::float8 AS "sinceMs"
          FROM order_mail_log AS log
         WHERE log.order_id = ${attempt.orderId} AND log.claim_token = ${attempt.claimToken}
           AND log.attempts = ${attempt.attempt} AND log.state = 'sending' AND log.dispatched_at IS NOT NULL`,
  );
  return rows[0]?.sinceMs ?? null;
}

/** What an operator lists: rows in a state, or whose outcome is unknown (whatever the policy made of it). */
export type MailLogFilter = 'sending' | 'sent' | 'failed' | 'unknown' | 'second-look';

/**
 * `second-look`: done rows and pending candidates (src/db/secondLook.ts); a pending row past its window is
 * never looked at and stays listed (docs/design.md "The second look").
 */
const SECOND_LOOK_ROWS = sql`(second_look IS NOT NULL
  OR (state = 'sent' AND outcome = 'unknown' AND unknown_policy = 'assume-sent' AND verification = 'inconclusive'
      AND dispatch_provider IS NOT NULL AND dispatch_send_key IS NOT NULL AND claim_token NOT LIKE 'legacy:%'))`;

/** Rows matching `filter` updated since `since`, most recently updated first, at most `limit`. */
export async function listMailLog(
  db: Database,
  input: { filter: MailLogFilter; since: Date | null; limit: number },
): Promise<MailLogRow[]> {
  const matches =
    input.filter === 'unknown'
      ? sql`outcome = 'unknown'`
      : input.filter === 'second-look'
        ? SECOND_LOOK_ROWS
        : sql`state = ${input.filter}`;
  const { rows } = await runSql<MailLogRow>(
    db,
    sql`SELECT ${ROW_COLUMNS} FROM order_mail_log
         WHERE ${matches} AND (${input.since}::timestamptz IS NULL OR updated_at >= ${input.since})
         ORDER BY updated_at DESC, order_id DESC
         LIMIT ${input.limit}`,
  );
  return rows;
}

/** A page's end: updated_at in microseconds (a Date would round it and skip rows) and order id. */
export interface QuietRowCursor {
  updatedAtMicros: string;
  orderId: string;
}

/**
 * Quiet 'sending' rows, oldest first, paged by a keyset on (updated_at, order_id): the sweep's candidates
 * (docs/design.md §7). With `namespace`, only that namespace's claims and legacy ones: another namespace's
 * run is unknown to this Temporal and must not be taken for closed.
 */
export async function listQuietSendingRows(
  db: Database,
  input: { olderThanMs: number; limit: number; namespace?: string; after?: QuietRowCursor | null },
): Promise<{ rows: MailLogRow[]; next: QuietRowCursor | null }> {
  const namespace = input.namespace ?? null;
  const afterMicros = input.after?.updatedAtMicros ?? null;
  const afterOrderId = input.after?.orderId ?? null;
  const { rows } = await runSql<MailLogRow & { updatedAtMicros: string }>(
    db,
    sql`SELECT ${ROW_COLUMNS},
               ((extract(epoch FROM updated_at) * 1000000)::numeric(20, 0))::text AS "updatedAtMicros"
          FROM order_mail_log
         WHERE state = 'sending'
           AND updated_at < now() - make_interval(secs => ${input.olderThanMs}::double precision / 1000)
           AND (${namespace}::text IS NULL OR starts_with(claim_token, ${namespace}::text || '/')
                OR starts_with(claim_token, 'legacy:'))
           AND (${afterMicros}::bigint IS NULL
                OR (updated_at, order_id) > (timestamptz 'epoch' + ${afterMicros}::bigint * interval '1 microsecond',
                                             ${afterOrderId}::bigint))
         ORDER BY updated_at, order_id
         LIMIT ${input.limit}`,
  );
  const last = rows.at(-1);
  return {
    rows: rows.map(({ updatedAtMicros: _cursor, ...row }) => row),
    next:
      rows.length < input.limit || last === undefined
        ? null
        : { updatedAtMicros: last.updatedAtMicros, orderId: last.orderId },
  };
}

/**
 * What the dispatch fence recorded of this attempt (migration 0015), with Postgres's now(); null unless the
 * row is still this attempt's, dispatched. The facts the evidence rules judge by.
 */
export async function readDispatchedAttempt(
  db: Database,
  attempt: { orderId: string; claimToken: string; attempt: number },
): Promise<{ attempt: DispatchedAttempt; recordedSendKey: string | null; now: Date } | null> {
  const { rows } = await runSql<{
    dispatchedAt: Date;
    provider: string | null;
    origin: string | null;
    scope: string | null;
    credentialFingerprint: string | null;
    account: string | null;
    sendKey: string | null;
    sendTimeoutMs: number | null;
    keyFirstDispatchedAt: Date;
    now: Date;
  }>(
    db,
    sql`SELECT log.dispatched_at AS "dispatchedAt", log.dispatch_provider AS provider, log.dispatch_origin AS origin,
               log.dispatch_scope AS scope, log.dispatch_credential_fingerprint AS "credentialFingerprint",
               log.dispatch_account AS account, log.dispatch_send_key AS "sendKey", log.dispatch_send_timeout_ms AS "sendTimeoutMs",
               LEAST(log.dispatched_at,
                     (SELECT min(earlier.dispatched_at) FROM order_mail_attempts AS earlier
                       WHERE earlier.order_id = log.order_id AND earlier.resend_count = log.resend_count))
                 AS "keyFirstDispatchedAt",
               now() AS now
          FROM order_mail_log AS log
         WHERE log.order_id = ${attempt.orderId} AND log.claim_token = ${attempt.claimToken}
           AND log.attempts = ${attempt.attempt} AND log.state = 'sending' AND log.dispatched_at IS NOT NULL`,
  );
  const row = rows[0];
  if (row === undefined) return null;
  const destination =
    row.provider === null || row.origin === null
      ? null
      : {
          provider: row.provider,
          origin: row.origin,
          scope: row.scope,
          credentialFingerprint: row.credentialFingerprint,
          account: row.account,
        };
  return {
    attempt: {
      orderId: attempt.orderId,
      attempt: attempt.attempt,
      sendKey: row.sendKey ?? '',
      destination,
      dispatchedAt: row.dispatchedAt,
      sendTimeoutMs: row.sendTimeoutMs,
      keyFirstDispatchedAt: row.keyFirstDispatchedAt,
    },
    recordedSendKey: row.sendKey,
    now: row.now,
  };
}
