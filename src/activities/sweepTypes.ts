// What the sweep's activities take and return (docs/design.md §7): types and one constant only.
import type { Client } from '@temporalio/client';
import type { ConfirmedOrderCursor } from '../db/confirmedOrders';
import type { SeenRow } from '../mailRow/statements';
import type { Database } from '../db/pool';
import type { OrderMailMetrics } from '../metrics/orderMailMetrics';
import type { ActivityDependencies } from './dependencies';
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { VerificationSettings } from '../shared/workflowSettings';

export type { ConfirmedOrderCursor };

/** Orphan.runStatus of a claim an outside writer (the case study's old workers) left 'sending'. */
export const OUTSIDE_WRITER = 'OUTSIDE_WRITER';

export interface SweepSettings {
  /** Orders confirmed more recently than this are left to the order service's own start. */
  graceMs: number;
  /** Orders confirmed longer ago than this are never mailed by the sweep. */
  lookbackMs: number;
  /** Nor are orders confirmed before this instant (the go-live time), when set. */
  confirmedSince: Date | null;
  /** Orders per start batch, and 'sending' rows examined per sweep. */
  batchSize: number;
  /** MAIL_SECOND_LOOK_MAX_LATE_H in ms (0: off; absent: 24 h), the second look's window. */
  secondLookMaxLateMs?: number;
}

export interface SweepDependencies {
  db: Database;
  /** Starts workflows and describes runs; bound to the worker's namespace. */
  temporal: Client;
  settings: SweepSettings;
  /** Counts the orders a sweep could not start (order_mail_orders_left_without_mail_total). */
  metrics?: OrderMailMetrics;
}

export interface StartBatchResult {
  found: number;
  started: number;
  /** Orders whose only run closed without making a log row (before its first claim), started again. */
  restarted: number;
  /** Orders restarted once whose run closed row-less again: named for an operator, not started a third time. */
  closedWithoutRow: string[];
  alreadyStarted: number;
  /** Orders whose workflow id a workflow of another type holds: not started, and never counted as started. */
  conflicts: WorkflowIdConflict[];
  next: ConfirmedOrderCursor | null;
  /** The sweep's second look, made by its first batch (src/activities/secondLook.ts); absent on later ones. */
  secondLook?: {
    asked: number;
    reopened: string[];
    found: number;
    undecided: number;
    started: number;
    policyDuplicates: string[];
  };
}

export interface WorkflowIdConflict {
  orderId: string;
  workflowType: string;
  runId: string;
}

export interface Orphan {
  orderId: string;
  /** The run the claim token names and Temporal's word on it; an outside writer's claim: OUTSIDE_WRITER. */
  workflowId: string;
  runId: string;
  runStatus: string;
  /** Whether that run had passed the dispatch fence: if so, its outcome is unknown. */
  dispatched: boolean;
  attempts: number;
  claimedAt: string;
  /** The row as the sweep read it: the fence its settlement is made under. */
  seen: SeenRow;
  /** The key the dispatched request carried, which the provider is asked by; null for an outside writer's. */
  sendKey: string | null;
}

export interface OrphansFound {
  examined: number;
  stuck: Orphan[];
  /** More 'sending' rows than one sweep examines. */
  more: boolean;
  /** This worker's policy, for the sweep workflow to decide with (recorded in history). */
  unknownOutcomePolicy: UnknownOutcomePolicy;
  /** How this worker asks the provider (MAIL_VERIFY) before the policy settles a claim; null when it cannot. */
  verification: VerificationSettings | null;
  /** How long after its dispatch an orphan's request may have been under way (the send timeout). */
  requestMayLastMs: number;
  /** Dispatched orphans too young for the provider's log: left for a later sweep. */
  youngerThanSettleDelay: number;
}

/** What the sweep needs of the mail worker it runs on: its policy, and who it is for the audit trail. */
export interface SweepMailSettings {
  settings: {
    unknownOutcomePolicy: UnknownOutcomePolicy;
    verification?: VerificationSettings | null;
    sendTimeoutMs: number;
  };
  workerIdentity: string;
  /** MAIL_DEPLOYMENT_ID, for the send key of a row whose fence recorded none. */
  deploymentId?: string;
}

/** What the second look needs of the mail worker: its verifiers, beside what the sweep has of it. */
export type SecondLookMail = SweepMailSettings & Pick<ActivityDependencies, 'verifier' | 'verifiers'>;
