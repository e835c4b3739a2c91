// The shapes one attempt hands to the loop: how the run ends (OrderMailResult), how one attempt ended (Step)
// and the table type over the step kinds. Types only, so every module of the workflow can name them.
import type { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { ClaimResult, OrderMailActivities } from '../activities';
import type { LogOutcome, MailOutcome } from '../shared/mailOutcome';
import type { SendNotAccepted } from '../shared/sendOutcome';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';

export interface OrderMailResult {
  orderId: string;
  /** 'sent': this run settled the mail as sent. 'already-sent': an earlier run had. 'claim-lost': someone
   * else (an operator's resolve) settled the row while this run held it, so it stopped without recording. */
  result: 'sent' | 'already-sent' | 'claim-lost';
  outcome: LogOutcome | null;
  /** The log row's attempt number this run ended on (attempts of the order, all runs). */
  attempts: number;
  /** The provider's id of the accepted mail, also when the claim was lost before it could be recorded. */
  providerMessageId: string | null;
  /** Why this run sent nothing, in words an operator reads in the Web UI's result panel. */
  explanation?: string;
}

export type Claimed = Extract<ClaimResult, { kind: 'claimed' }>;
export type OrphanToVerify = Extract<ClaimResult, { kind: 'verify-orphan' }>;
export type Recorded = Exclude<
  Awaited<ReturnType<OrderMailActivities['recordOrderMailOutcome']>>,
  { kind: 'dispatch-changed' }
>;

/** The row an attempt works on: the order, the claim's token and the attempt number. */
export interface AttemptRef {
  orderId: string;
  claimToken: string;
  attempt: number;
}

/** How one attempt (claim → send → record) ended, when no cancel came during it. */
export type Ended =
  | { kind: 'finished'; result: OrderMailResult }
  | { kind: 'held-at-same-time'; holder: string }
  /** The claim found no order row (not visible yet, or never): `failure` is what the run fails with at the bound. */
  | { kind: 'order-not-visible'; failure: ApplicationFailure }
  /** This attempt sent nothing, and another claim holds the row: claim again (`result`, once out of tries). */
  | { kind: 'lost-while-held'; result: OrderMailResult }
  /** A closed run's dispatched attempt was verified and settled (null: someone else settled it): claim again. */
  | { kind: 'orphan-settled'; attempt: number; settledAs: string | null }
  /** The fence refused the send because an operator holds sends: recorded failed/not_sent, no request made. */
  | { kind: 'held'; attempt: number }
  /** Recorded as failed: `sent` is the send's outcome as the activity gave it, `recordedOutcome` the row's. */
  | {
      kind: 'not-accepted';
      attempt: number;
      settings: OrderMailWorkflowSettings;
      sent: SendNotAccepted;
      /** The send activity's failure: the cause a run that fails for this outcome carries (the failure chain). */
      cause?: ActivityFailure;
      recordedOutcome: MailOutcome;
    };

/** What an attempt left when a cancel came during it: its end, or what only a cancel leads to. */
export type LeftByCancel =
  | Ended
  /** Cancelled between claim and send: the claim was released, nothing was sent. */
  | { kind: 'released'; attempt: number }
  /** Cancelled while waiting to ask about a closed run's attempt: left as it was, for the sweep to ask. */
  | { kind: 'orphan-left'; attempt: number };

/** What the loop acts on: every kind has its row in the step table, and every row is reachable. */
export type Step = Ended | { kind: 'cancelled'; left: LeftByCancel };

export type StepKind = Step['kind'];

/** A row of the table: the run's result, or AGAIN to claim again; a run that must fail throws a failure. */
export type StepRow<S extends { kind: string }, K extends S['kind'], Run, Next> = (
  step: Extract<S, { kind: K }>,
  run: Run,
) => Promise<Next>;

/** One row per step kind, each typed by its own kind: a new kind does not compile until it has its row. */
export type StepTable<S extends { kind: string }, Run, Next> = { [K in S['kind']]: StepRow<S, K, Run, Next> };
