// Every statement that writes order_mail_log or order_mail_attempts: one function per transition of
// ./transitions.ts, the fence in its WHERE, plain values in (docs/design.md §3, "One place writes the row").
import { randomUUID } from 'node:crypto';
import { ACT_COLUMNS, type OperatorActRow } from '../db/operatorActRow';
import type { MailLogRow, MailLogState } from '../db/orderMailLog';
import type { Database } from '../db/pool';
import { runSql, sql, type SqlFragment } from '../db/sql';
import type { MailOutcome, UnknownSettlement } from '../shared/mailOutcome';
import type { UnknownOutcomeDecision, VerificationRecord } from '../shared/unknownOutcome';

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
 * The fence every transition shares: the row as read (state, holder, attempt, key; only the fence sets
 * dispatched_at). Each WHERE also names its own from-states: a caller's read is not the fence.
 */
function asRead(row: MailLogRow | SeenRow): SqlFragment {
  const seen = 'dispatched' in row ? row : seenRowOf(row);
  return sql`log.order_id = ${seen.orderId} AND log.state = ${seen.state} AND log.claim_token = ${seen.claimToken}
    AND log.attempts = ${seen.attempts} AND log.resend_count = ${seen.resendCount}
    AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}`;
}

/** Only a later claim moves a row: a claim issued at the same time or earlier orders nothing. */
function issuedBefore(issuedAt: Date): SqlFragment {
  return sql`log.claim_issued_at < ${issuedAt}::timestamptz`;
}

/**
 * The template of a settled attempt (migration 0061), only if this attempt dispatched: a claim leaves the
 * last one's.
 */
const TEMPLATE_OF_SETTLED = sql`CASE WHEN dispatched_at IS NOT NULL THEN dispatch_template_name END,
                 CASE WHEN dispatched_at IS NOT NULL THEN dispatch_template_sha256 END`;

/** The audit row of the attempt a statement settles, from its RETURNING columns (CTE `settled`). */
const AUDIT_OF_SETTLED = sql`INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at,
         dispatched_at, state, outcome, unknown_policy, error, recorded_by, provider, provider_choice)`;

/** Who claims, and which provider the claim chose (claimProviderChoice.ts's claimedAt). */
export interface Claimer {
  claimToken: string;
  issuedAt: Date;
  provider: string | null;
  providerChoice: string | null;
}

// ---- the claim ---------------------------------------------------------------------------------------------

/**
 * firstClaim: none → sending, attempt 1, only for an order the contract view shows; 'exists' when a row is
 * there.
 */
export async function firstClaim(
  db: Database,
  orderId: string,
  claim: Claimer,
): Promise<'inserted' | 'exists' | 'order-not-found'> {
  const { provider, providerChoice } = claim;
  const { rows } = await runSql<{ found: boolean; inserted: boolean }>(
    db,
    sql`WITH found AS (
          SELECT EXISTS (SELECT 1 FROM order_mail_source.orders_for_mail WHERE order_id = ${orderId}) AS found
        ), inserted AS (
          INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, provider, provider_choice)
          SELECT ${orderId}::bigint, 'sending', 1, ${claim.claimToken}::text, ${claim.issuedAt}::timestamptz,
                 ${provider}::text, ${providerChoice}::text
            FROM found WHERE found.found
          ON CONFLICT (order_id) DO NOTHING
          RETURNING 1
        )
        SELECT found.found, EXISTS (SELECT 1 FROM inserted) AS inserted FROM found`,
  );
  const row = rows[0]!;
  return !row.found ? 'order-not-found' : row.inserted ? 'inserted' : 'exists';
}

/** reclaimFailed: failed → sending, attempts + 1. The new attempt number, or null when the fence refused. */
export async function reclaimFailed(db: Database, row: MailLogRow, claim: Claimer): Promise<number | null> {
  const { provider, providerChoice } = claim;
  const { rows } = await runSql<{ attempts: number }>(
    db,
    sql`UPDATE order_mail_log AS log
           SET state = 'sending', attempts = log.attempts + 1, claim_token = ${claim.claimToken},
               provider = ${provider}, provider_choice = ${providerChoice},
               claim_issued_at = ${claim.issuedAt}, claimed_at = now(), dispatched_at = NULL, outcome = NULL,
               unknown_policy = NULL, verification = NULL, provider_message_id = NULL, http_status = NULL, last_error = NULL,
               updated_at = now()
         WHERE ${asRead(row)} AND log.state = 'failed' AND ${issuedBefore(claim.issuedAt)}
        RETURNING log.attempts`,
  );
  return rows[0]?.attempts ?? null;
}

/** takeOverUndispatched: sending → sending, attempts + 1; the orphan audited failed/not_sent. */
export async function takeOverUndispatched(
  db: Database,
  row: MailLogRow,
  claim: Claimer & { recordedBy: string; note: string },
): Promise<number | null> {
  const { provider, providerChoice, note } = claim;
  const { rows } = await runSql<{ attempts: number }>(
    db,
    sql`WITH taken AS (
          UPDATE order_mail_log AS log
             SET claim_token = ${claim.claimToken}, claim_issued_at = ${claim.issuedAt},
                 provider = ${provider}, provider_choice = ${providerChoice},
                 attempts = log.attempts + 1, claimed_at = now(), updated_at = now()
           WHERE ${asRead(row)} AND log.state = 'sending' AND log.dispatched_at IS NULL
             AND ${issuedBefore(claim.issuedAt)}
          RETURNING log.attempts
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT ${row.orderId}, ${row.attempts}, ${row.claimToken}, ${row.resendCount}, ${row.claimedAt}::timestamptz,
                 NULL, 'failed', 'not_sent', NULL, ${note}, ${claim.recordedBy}, ${row.provider}, ${row.providerChoice}
            FROM taken
        )
        SELECT attempts FROM taken`,
  );
  return rows[0]?.attempts ?? null;
}

/**
 * settleDeferredUnknown: the policy settles an unknown left for a retry under the key, as a new attempt with no
 * request (claim_issued_at stays); an undispatched orphan is audited as in takeOverUndispatched.
 */
export async function settleDeferredUnknown(
  db: Database,
  row: MailLogRow,
  input: {
    claimToken: string;
    issuedAt: Date;
    recordedBy: string;
    decision: UnknownOutcomeDecision;
    /** When the earliest request under the key left: the row's dispatched_at names it. */
    dispatchedAt: Date;
    note: string;
    /** Given exactly when the row is an undispatched orphan. */
    orphanNote: string | null;
  },
): Promise<boolean> {
  const { decision, note, orphanNote } = input;
  const { rowCount } = await runSql(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${decision.state}, outcome = ${decision.outcome}, unknown_policy = ${decision.unknownPolicy},
                 attempts = log.attempts + 1, claim_token = ${input.claimToken}, claimed_at = now(),
                 dispatched_at = ${input.dispatchedAt}::timestamptz, provider_message_id = NULL,
                 http_status = NULL, last_error = ${note}, updated_at = now()
           WHERE ${asRead(row)} AND (log.state = 'failed' OR (log.state = 'sending' AND log.dispatched_at IS NULL))
             AND ${issuedBefore(input.issuedAt)}
          RETURNING log.*
        ), orphan_audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT ${row.orderId}, ${row.attempts}, ${row.claimToken}, ${row.resendCount}, ${row.claimedAt}::timestamptz,
                 NULL, 'failed', 'not_sent', NULL, ${orphanNote}::text, ${input.recordedBy}, ${row.provider},
                 ${row.providerChoice}
            FROM settled WHERE ${orphanNote}::text IS NOT NULL
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, NULL, state, outcome, unknown_policy,
                 last_error, ${input.recordedBy}, provider, provider_choice
            FROM settled
        )
        SELECT 1 FROM settled`,
  );
  return rowCount === 1;
}

// ---- an orphan ----------------------------------------------------------------------------------

/**
 * settleDispatchedOrphan: as `decision` says; `issuedAt` null for the sweep (fenced on the row as read
 * alone).
 */
export async function settleDispatchedOrphan(
  db: Database,
  row: MailLogRow | SeenRow,
  input: { decision: UnknownOutcomeDecision; note: string; recordedBy: string; issuedAt: Date | null },
): Promise<boolean> {
  const { decision } = input;
  const providerMessageId = decision.kind === 'verified-accepted' ? decision.providerMessageId : null;
  const fence = input.issuedAt === null ? sql`TRUE` : issuedBefore(input.issuedAt);
  const { rowCount } = await runSql(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${decision.state}, outcome = ${decision.outcome}, unknown_policy = ${decision.unknownPolicy},
                 verification = ${decision.verification ?? null}, provider_message_id = ${providerMessageId},
                 last_error = ${input.note}, updated_at = now()
           WHERE ${asRead(row)} AND log.state = 'sending' AND log.dispatched_at IS NOT NULL AND ${fence}
          RETURNING log.*
        ), audit AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, unknown_policy, verification, provider_message_id,
                                           error, recorded_by, provider, provider_choice, template_name,
                                           template_sha256)
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, dispatched_at, state, outcome,
                 unknown_policy, verification, provider_message_id, last_error, ${input.recordedBy}, provider,
                 provider_choice, ${TEMPLATE_OF_SETTLED}
            FROM settled
        )
        SELECT 1 FROM settled`,
  );
  return rowCount === 1;
}

/** releaseUndispatchedOrphan: an orphan that never dispatched → failed/not_sent, audited. */
export async function releaseUndispatchedOrphan(
  db: Database,
  seen: SeenRow,
  input: { note: string; recordedBy: string },
): Promise<boolean> {
  const { note } = input;
  const { rowCount } = await runSql(
    db,
    sql`WITH released AS (
          UPDATE order_mail_log AS log
             SET state = 'failed', outcome = 'not_sent', unknown_policy = NULL, last_error = ${note},
                 updated_at = now()
           WHERE ${asRead(seen)} AND log.state = 'sending' AND log.dispatched_at IS NULL
          RETURNING log.*
        ), audit AS (
          ${AUDIT_OF_SETTLED}
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, NULL, state, outcome, NULL,
                 last_error, ${input.recordedBy}, provider, provider_choice
            FROM released
        )
        SELECT 1 FROM released`,
  );
  return rowCount === 1;
}

// ---- the send and the record --------------------------------------------------------------------------------

/** Where the request about to leave goes (src/evidence/destination.ts), as the row records it. */
export interface DispatchColumns {
  provider: string | null;
  origin: string | null;
  scope: string | null;
  credentialFingerprint: string | null;
  account: string | null;
  sendKey: string;
  sendTimeoutMs: number;
  templateName: string | null;
  templateSha256: string | null;
}

/**
 * markDispatched, the dispatch fence: one statement fenced by (claim token, attempt, 'sending', not yet
 * dispatched, the row's provider, no hold on it). True when this attempt passed it.
 */
export async function markDispatched(
  db: Database,
  input: {
    orderId: string;
    claimToken: string;
    attempt: number;
    provider: string | null;
    dispatch: DispatchColumns;
  },
): Promise<boolean> {
  const d = input.dispatch;
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_log SET dispatched_at = now(), updated_at = now(),
               dispatch_provider = ${d.provider}, dispatch_origin = ${d.origin},
               dispatch_scope = ${d.scope},
               dispatch_credential_fingerprint = ${d.credentialFingerprint},
               dispatch_account = ${d.account},
               dispatch_send_key = ${d.sendKey}, dispatch_send_timeout_ms = ${Math.ceil(d.sendTimeoutMs)},
               dispatch_template_name = ${d.templateName},
               dispatch_template_sha256 = ${d.templateSha256}
         WHERE order_id = ${input.orderId} AND claim_token = ${input.claimToken} AND attempts = ${input.attempt}
           AND state = 'sending' AND dispatched_at IS NULL
           AND provider IS NOT DISTINCT FROM ${input.provider}::text
           AND NOT EXISTS (SELECT 1 FROM order_mail_send_holds AS hold
                            WHERE hold.scope = '*' OR hold.scope = ${input.provider}::text)`,
  );
  return rowCount === 1;
}

export interface RecordValues {
  orderId: string;
  claimToken: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownSettlement | null;
  /** How an unknown outcome was verified (a lookup, a webhook, or tried in vain); absent (null) when it was not. */
  verification?: VerificationRecord | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
  recordedBy: string;
  /** What the decision took for granted about the dispatch fence; null when nothing depends on it. */
  expectDispatched: boolean | null;
}

/** record: settles this attempt (sending → sent/failed) with its audit row; null when the fence refused. */
export async function record(
  db: Database,
  input: RecordValues,
): Promise<{ state: 'sent' | 'failed'; outcome: MailOutcome } | null> {
  const dispatchedAsExpected =
    input.expectDispatched === null
      ? sql`TRUE`
      : sql`(log.dispatched_at IS NOT NULL) = ${input.expectDispatched}`;
  const { rows } = await runSql<{ state: 'sent' | 'failed'; outcome: MailOutcome }>(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${input.state}, outcome = ${input.outcome}, unknown_policy = ${input.unknownPolicy},
                 verification = ${input.verification ?? null},
                 provider_message_id = ${input.providerMessageId}, http_status = ${input.httpStatus}::int,
                 last_error = ${input.error}, updated_at = now()
           WHERE log.order_id = ${input.orderId} AND log.claim_token = ${input.claimToken}
             AND log.attempts = ${input.attempt} AND log.state = 'sending' AND ${dispatchedAsExpected}
          RETURNING log.*
        ), audit AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, unknown_policy, verification, provider_message_id,
                                           http_status, error, recorded_by, provider, provider_choice,
                                           template_name, template_sha256)
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, dispatched_at, state, outcome,
                 unknown_policy, verification, provider_message_id, http_status, last_error, ${input.recordedBy},
                 provider, provider_choice, ${TEMPLATE_OF_SETTLED}
            FROM settled
        )
        SELECT state, outcome FROM settled`,
  );
  return rows[0] ?? null;
}

/**
 * recordAfterClaimLost: whoever moved the row wrote no audit row for this attempt, so this answer becomes the
 * attempt's own audit row; the log row is not changed. True when it wrote one.
 */
export async function recordAfterClaimLost(db: Database, input: RecordValues): Promise<boolean> {
  const { rowCount: inserted } = await runSql(
    db,
    sql`INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                         provider_message_id, http_status, error, recorded_by, provider, provider_choice)
        SELECT ${input.orderId}, ${input.attempt}, ${input.claimToken}, log.resend_count, log.claimed_at,
               ${input.state}, ${input.outcome}, ${input.providerMessageId}, ${input.httpStatus}::int,
               ${`recorded after the claim was lost; the log row was not changed${input.error === null ? '' : `: ${input.error}`}`},
               ${input.recordedBy}, NULL, NULL
          FROM order_mail_log AS log
         WHERE log.order_id = ${input.orderId}
           -- Only an attempt the row has left: a live or future attempt's audit row is its holder's to write.
           AND (log.attempts > ${input.attempt} OR (log.attempts = ${input.attempt} AND log.state <> 'sending'))
        ON CONFLICT (order_id, attempt) DO NOTHING`,
  );
  return inserted === 1;
}

// ---- the second look ----------------------------------------------------------------------------------------

/**
 * The second look's fence, for its reads and both transitions: which rows and for how long, on Postgres's
 * clock (docs/design.md "The second look").
 */
export function secondLookFence(boundMs: number): SqlFragment {
  return sql`log.state = 'sent' AND log.outcome = 'unknown' AND log.unknown_policy = 'assume-sent'
    AND log.verification = 'inconclusive' AND log.second_look IS NULL
    AND log.dispatched_at IS NOT NULL AND log.dispatch_provider IS NOT NULL AND log.dispatch_origin IS NOT NULL
    AND log.dispatch_send_key IS NOT NULL
    AND log.claim_token NOT LIKE 'legacy:%'
    AND NOT EXISTS (SELECT 1 FROM order_mail_attempts AS legacy
                     WHERE legacy.order_id = log.order_id AND legacy.claim_token LIKE 'legacy:%')
    AND now() < log.dispatched_at + ${boundMs}::bigint * interval '1 millisecond'`;
}

/** The attempt the second look was about, held by the same token. */
export interface LookedAttempt {
  orderId: string;
  claimToken: string;
  attempts: number;
}

function asLooked(candidate: LookedAttempt): SqlFragment {
  return sql`log.order_id = ${candidate.orderId} AND log.claim_token = ${candidate.claimToken}
    AND log.attempts = ${candidate.attempts}`;
}

/** reopenAfterSecondLook: sent → failed, the one automatic way back from sent; true when it changed the row. */
export async function reopenAfterSecondLook(
  db: Database,
  candidate: LookedAttempt,
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

/** secondLookFound (sent → sent): the look is done (second_look 'found'); the late answer says accepted. */
export async function secondLookFound(
  db: Database,
  candidate: LookedAttempt,
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

// ---- an operator ------------------------------------------------------------------------------------------

export interface ResolveValues {
  orderId: string;
  as: 'sent' | 'failed';
  reason: string;
  /** The row as the operator's tool read it; the statement changes nothing if it is no longer so. */
  seen: { state: MailLogState; attempts: number; claimToken: string; dispatched: boolean };
}

/**
 * operatorResolve: the operator's state, the cut-off attempt's audit row and the act in one statement; null
 * if not as seen.
 */
export async function operatorResolve(db: Database, input: ResolveValues): Promise<OperatorActRow | null> {
  const { seen } = input;
  const resend = input.as === 'failed' ? 1 : 0;
  const cutOffOutcome = seen.dispatched ? 'unknown' : 'not_sent';
  const cutOffNote = `while in flight (resolved as ${input.as}): ${input.reason}`;
  const { rows } = await runSql<OperatorActRow>(
    db,
    sql`WITH resolved AS (
          UPDATE order_mail_log AS log
             SET state = ${input.as}, outcome = 'resolved', unknown_policy = NULL, verification = NULL,
                 -- Never a prefix of a run's token ('<namespace>/<workflow id>/<run id>'): no run takes it for its own.
                 claim_token = ${`operator:${randomUUID()}`}, resend_count = log.resend_count + ${resend}::int,
                 last_error = ${`resolved as ${input.as} by `}::text || session_user || ${`: ${input.reason}`}::text,
                 updated_at = now()
            FROM (SELECT * FROM order_mail_log WHERE order_id = ${input.orderId} FOR UPDATE) AS previous
           WHERE log.order_id = ${input.orderId} AND previous.order_id = log.order_id
             AND log.state = ${seen.state} AND log.attempts = ${seen.attempts} AND log.claim_token = ${seen.claimToken}
             AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}
          RETURNING to_jsonb(previous) AS before, to_jsonb(log) AS after
        ), cut_off AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, error, recorded_by, provider, provider_choice,
                                           template_name, template_sha256)
          SELECT ${input.orderId}, (before->>'attempts')::int, before->>'claim_token', (before->>'resend_count')::int,
                 (before->>'claimed_at')::timestamptz, (before->>'dispatched_at')::timestamptz, ${input.as},
                 ${cutOffOutcome}, 'ended by operator ' || session_user || ' ' || ${cutOffNote}::text,
                 'operator:' || session_user, before->>'provider',
                 before->>'provider_choice',
                 CASE WHEN before->>'dispatched_at' IS NOT NULL THEN before->>'dispatch_template_name' END,
                 CASE WHEN before->>'dispatched_at' IS NOT NULL THEN before->>'dispatch_template_sha256' END
            FROM resolved WHERE before->>'state' = 'sending'
        )
        INSERT INTO order_mail_operator_acts (order_id, act, reason, row_before, row_after)
        SELECT ${input.orderId}, 'resolve', ${input.reason}, before, after FROM resolved
        RETURNING ${ACT_COLUMNS}`,
  );
  return rows[0] ?? null;
}

// ---- retention ----------------------------------------------------------------------------------------------

/** The provider's webhook events, pruned with the attempts where the table exists. */
export const PROVIDER_EVENTS_TABLE = 'order_mail_provider_events';

export interface PruneBatch {
  examined: number;
  attempts: number;
  lateAnswers: number;
  events: number;
  lastUpdatedAt: string | null;
  lastOrderId: string | null;
}

/**
 * pruneHistory: one batch, old sent rows' audit rows older than the cutoff (counted on a dry run); log rows
 * stay.
 */
export async function pruneHistory(
  db: Database,
  input: {
    cutoff: Date;
    cursor: { updatedAt: string; orderId: string } | null;
    batchSize: number;
    dryRun: boolean;
    withEvents: boolean;
  },
): Promise<PruneBatch> {
  const { rows } = await db.query<PruneBatch>(batchStatement(input.dryRun, input.withEvents), [
    input.cutoff,
    input.cursor?.updatedAt ?? null,
    input.cursor?.orderId ?? '0',
    input.batchSize,
  ]);
  return rows[0]!;
}

/** $1 cutoff, $2/$3 cursor (updated_at as text, order id), $4 batch size. */
function batchStatement(dryRun: boolean, withEvents: boolean): string {
  const batch = `batch AS (
      SELECT log.order_id, log.updated_at
        FROM order_mail_log AS log
       WHERE log.state = 'sent' AND log.updated_at < $1
         AND ($2::text IS NULL OR (log.updated_at, log.order_id) > ($2::timestamptz, $3::bigint))
       ORDER BY log.updated_at, log.order_id
       LIMIT $4
       ${dryRun ? '' : 'FOR SHARE OF log SKIP LOCKED'}
    )`;
  const attempts = dryRun
    ? `attempts AS (SELECT 1 FROM order_mail_attempts AS a JOIN batch USING (order_id) WHERE a.finished_at < $1)`
    : `attempts AS (DELETE FROM order_mail_attempts AS a USING batch
                     WHERE a.order_id = batch.order_id AND a.finished_at < $1 RETURNING 1)`;
  // The late answers of exactly those attempts, in the same statement so the foreign key sees both gone; a
  // racing late answer fails the batch harmlessly (docs/design.md §4, "The prune").
  const lateAnswers = dryRun
    ? `late AS (SELECT 1 FROM order_mail_late_answers AS l JOIN batch USING (order_id)
                  JOIN order_mail_attempts AS a ON a.order_id = l.order_id AND a.attempt = l.attempt
                 WHERE a.finished_at < $1)`
    : `late AS (DELETE FROM order_mail_late_answers AS l USING batch, order_mail_attempts AS a
                 WHERE l.order_id = batch.order_id AND a.order_id = l.order_id AND a.attempt = l.attempt
                   AND a.finished_at < $1 RETURNING 1)`;
  const events = !withEvents
    ? ''
    : dryRun
      ? `, events AS (SELECT 1 FROM ${PROVIDER_EVENTS_TABLE} AS e JOIN batch USING (order_id) WHERE e.received_at < $1)`
      : `, events AS (DELETE FROM ${PROVIDER_EVENTS_TABLE} AS e USING batch
                       WHERE e.order_id = batch.order_id AND e.received_at < $1 RETURNING 1)`;
  return `WITH ${batch}, ${attempts}, ${lateAnswers}${events}, last AS (
      SELECT updated_at::text AS at, order_id::text AS id FROM batch ORDER BY updated_at DESC, order_id DESC LIMIT 1
    )
    SELECT (SELECT count(*)::int FROM batch) AS examined,
           (SELECT count(*)::int FROM attempts) AS attempts,
           (SELECT count(*)::int FROM late) AS "lateAnswers",
           ${withEvents ? '(SELECT count(*)::int FROM events)' : '0'} AS events,
           (SELECT at FROM last) AS "lastUpdatedAt",
           (SELECT id FROM last) AS "lastOrderId"`;
}

// ---- the case study's writer (migration 0009; trigger of 0050) ---------------------------------------------
// Its statements word for word, never called by this service: here so the tests and the checker run them.

/** The case study's statements, word for word (test/peers/caseStudyKit.ts keeps the same text). */
export const CASE_STUDY_STATEMENTS = {
  claim:
    "INSERT INTO order_mail_log (order_id, state, attempts) VALUES ($1, 'sending', 1) ON CONFLICT (order_id) DO NOTHING",
  reclaim:
    "UPDATE order_mail_log SET state='sending', attempts=attempts+1, updated_at=NOW() WHERE order_id=$1 AND state='failed'",
  recordFailed: "UPDATE order_mail_log SET state='failed' WHERE order_id=$1",
  recordSent: "UPDATE order_mail_log SET state='sent' WHERE order_id=$1",
} as const;

/** caseStudyClaim: none → sending, under a 'legacy:' token the trigger gives it, counted dispatched. */
export async function caseStudyClaim(db: Database, orderId: string): Promise<boolean> {
  const { rowCount } = await db.query(CASE_STUDY_STATEMENTS.claim, [orderId]);
  return rowCount === 1;
}

/** caseStudyReclaim: failed → sending, only on a row an outside writer last claimed. */
export async function caseStudyReclaim(db: Database, orderId: string): Promise<boolean> {
  const { rowCount } = await db.query(CASE_STUDY_STATEMENTS.reclaim, [orderId]);
  return rowCount === 1;
}

/**
 * caseStudyRecord: sending → sent (accepted, or timed out) or failed (a 4xx), outcome 'legacy', with the
 * audit row, only on a row an outside writer holds; on any other row it is caseStudyLateRecord.
 */
export async function caseStudyRecord(
  db: Database,
  orderId: string,
  state: 'sent' | 'failed',
): Promise<boolean> {
  const statement = state === 'sent' ? CASE_STUDY_STATEMENTS.recordSent : CASE_STUDY_STATEMENTS.recordFailed;
  const { rowCount } = await db.query(statement, [orderId]);
  return rowCount === 1;
}

/** caseStudyLateRecord: the same statement on a row no outside writer holds: the row stays, a late answer. */
export const caseStudyLateRecord = caseStudyRecord;
