// The operator-act audit row as the ops CLI reads it, shared by the resolve statement and the acts' queries.
import type { LogOutcome } from '../shared/mailOutcome';
import type { MailLogState } from './orderMailLog';
import { sql } from './sql';

/** 'reset': a reset made outside the ops CLI, as recorded before 0057; now order_mail_observed_resets. */
export type OperatorActKind = 'retry' | 'resolve' | 'reset';

/** The log row as an act saw it, kept in the audit table (no personal data: the row holds none). */
export interface MailLogSnapshot {
  state: MailLogState;
  outcome: LogOutcome | null;
  attempts: number;
  claim_token: string;
  dispatched_at: string | null;
  last_error: string | null;
  updated_at: string;
  [column: string]: unknown;
}

export interface OperatorActRow {
  id: string;
  orderId: string;
  act: OperatorActKind;
  /**
   * The login the act was written with (0057); on acts from before it, the name the CLI was told (and on a
   * 'reset', Temporal's identity).
   */
  operator: string;
  /** The database role the act was written with (set by the database); null on acts from before 0011. */
  dbSessionUser: string | null;
  actedAt: Date;
  reason: string;
  rowBefore: MailLogSnapshot | null;
  rowAfter: MailLogSnapshot | null;
  details: Record<string, unknown>;
}

export const ACT_COLUMNS = sql`id::text AS id, order_id::text AS "orderId", act, operator, db_session_user AS "dbSessionUser",
  acted_at AS "actedAt", reason,
  row_before AS "rowBefore", row_after AS "rowAfter", details`;
