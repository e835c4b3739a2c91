// Types only: the run's result, one attempt's Step, the step table and a row's Wait (docs/design.md §6).
import type { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/workflow';
import type { ClaimResult, OrderMailActivities } from '../activities';
import type { LogOutcome, MailOutcome } from '../shared/mailOutcome';
import type { SendNotAccepted } from '../shared/sendOutcome';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';

export interface OrderMailResult {
  orderId: string;
  /** 'claim-lost': someone else settled the row while this run held it. */
  result: 'sent' | 'already-sent' | 'claim-lost';
  outcome: LogOutcome | null;
  /** Counts the order's attempts over all runs. */
  attempts: number;
  providerMessageId: string | null;
  explanation?: string;
}

export type Claimed = Extract<ClaimResult, { kind: 'claimed' }>;
export type OrphanToVerify = Extract<ClaimResult, { kind: 'verify-orphan' }>;

/** The attempt as the activities name it. */
export type AttemptRef = Parameters<OrderMailActivities['readAttemptOutcomeFacts']>[0];

export type Ended =
  | { kind: 'finished'; result: OrderMailResult }
  | { kind: 'held-at-same-time'; holder: string }
  | { kind: 'order-not-visible'; failure: ApplicationFailure }
  | { kind: 'lost-while-held'; result: OrderMailResult }
  | { kind: 'orphan-settled'; attempt: number; settledAs: string | null }
  | { kind: 'held'; attempt: number }
  | {
      kind: 'not-accepted';
      attempt: number;
      settings: OrderMailWorkflowSettings;
      sent: SendNotAccepted;
      cause?: ActivityFailure;
      recordedOutcome: MailOutcome;
    };

export type LeftByCancel =
  Ended | { kind: 'released'; attempt: number } | { kind: 'orphan-left'; attempt: number };

export type Step = Ended | { kind: 'cancelled'; left: LeftByCancel };

/** One row per step kind, each typed by its own kind: a new kind does not compile until it has its row. */
export type StepTable<S extends { kind: string }, Run, Next> = {
  [K in S['kind']]: (step: Extract<S, { kind: K }>, run: Run, times: number) => Next;
};

/** A row's wait before claiming again; the resume signal ends a hold's early, a cancel with `cancelled()`. */
export interface Wait {
  ms: number;
  untilResumed?: true;
  cancelled: () => CancelledFailure;
}
