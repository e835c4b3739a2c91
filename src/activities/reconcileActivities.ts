// The reconciliation sweep's activities (docs/design.md §7): start the mail of confirmed orders that have no log
// row, find claims stuck in 'sending' whose run is closed, and settle each as the sweep decided. Registered
// on the same worker as the mail activities, by this sibling factory.
import { activityInfo, heartbeat, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { OrderMailWorkflowIdTakenError, RESTARTED_BY_MEMO, startOrderConfirmationMail } from '../client';
import { findConfirmedOrdersWithoutMail, type ConfirmedOrderCursor } from '../db/confirmedOrders';
import { isOutsideWriterToken, parseClaimToken } from '../db/claimToken';
import { settleClosedRunClaim, type ClosedRunSettlement } from '../db/closedRunAttempt';
import { seenRowOf, type SeenRow } from '../db/transitionFence';
import { listQuietSendingRows, readMailLog, timeSinceAttemptDispatch } from '../db/orderMailLog';
import { DEFAULT_DEPLOYMENT_ID } from '../evidence/sendKey';
import { orderConfirmationIdempotencyKey } from '../mail/idempotencyKey';
import { advanceReconcileProgress, sweepNotBefore } from '../db/reconcileProgress';
import type { Database } from '../db/pool';
import { noOrderMailMetrics, type OrderMailMetrics } from '../metrics/orderMailMetrics';
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { UnknownOutcomeDecision, VerificationAnswer } from '../shared/unknownOutcome';
import type { VerificationSettings } from '../shared/workflowSettings';

export type { ConfirmedOrderCursor };

/** StuckClaim.runStatus of a claim an outside writer (the case study's old workers) left 'sending'. */
export const OUTSIDE_WRITER = 'OUTSIDE_WRITER';

export interface ReconcileSettings {
  /** Orders confirmed more recently than this are left to the order service's own start. */
  graceMs: number;
  /** Orders confirmed longer ago than this are never mailed by the sweep. */
  lookbackMs: number;
  /** Nor are orders confirmed before this instant (the go-live time), when set. */
  confirmedSince: Date | null;
  /** Orders per start batch, and 'sending' rows examined per sweep. */
  batchSize: number;
}

export interface ReconcileDependencies {
  db: Database;
  /** Starts workflows and describes runs; bound to the worker's namespace. */
  temporal: Client;
  settings: ReconcileSettings;
  /** Counts the orders a sweep could not start (order_mail_orders_left_without_mail_total). */
  metrics?: OrderMailMetrics;
}

export interface StartBatchResult {
  found: number;
  started: number;
  /** Orders whose only run closed without making a log row (before its first claim), started again. */
  restarted: number;
  /**
   * Orders whose run closed without a log row although the sweep had already started them again once: not
   * started a third time (something keeps the run from claiming), named for an operator.
   */
  closedWithoutRow: string[];
  alreadyStarted: number;
  /** Orders whose workflow id a workflow of another type holds: not started, and never counted as started. */
  conflicts: WorkflowIdConflict[];
  next: ConfirmedOrderCursor | null;
}

export interface WorkflowIdConflict {
  orderId: string;
  workflowType: string;
  runId: string;
}

export interface StuckClaim {
  orderId: string;
  /**
   * The run named by the claim token, and what Temporal says of it (a closed status, or NOT_FOUND). For an
   * outside writer's claim (the case study's old workers, docs/adoption.md): the order's id, the claim token,
   * and OUTSIDE_WRITER.
   */
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

export interface StuckClaimsResult {
  examined: number;
  stuck: StuckClaim[];
  /** More 'sending' rows than one sweep examines. */
  more: boolean;
  /** This worker's policy, for the sweep workflow to decide with (recorded in history). */
  unknownOutcomePolicy: UnknownOutcomePolicy;
  /**
   * How this worker asks the provider (MAIL_VERIFY), for the sweep to ask about a dispatched claim before the
   * policy settles it; null (or absent, in results recorded before the sweep could ask) when it cannot.
   */
  verification?: VerificationSettings | null;
  /** How long after its dispatch a closed run's request may have been under way (the send timeout). */
  requestMayLastMs?: number;
  /** Dispatched claims of closed runs left for a later sweep: too young for the provider's log to be trusted. */
  youngerThanSettleDelay?: number;
}

/** What the sweep needs of the mail worker it runs on: its policy, and who it is for the audit trail. */
export interface ReconcileMailSettings {
  settings: {
    unknownOutcomePolicy: UnknownOutcomePolicy;
    verification?: VerificationSettings | null;
    sendTimeoutMs: number;
  };
  workerIdentity: string;
  /** MAIL_DEPLOYMENT_ID, for the send key of a row whose fence recorded none. */
  deploymentId?: string;
}

export function createReconcileActivities(deps: ReconcileDependencies, mail: ReconcileMailSettings) {
  return {
    /** One bounded batch: finds confirmed orders without a log row and starts each one's workflow. */
    async startMailsForConfirmedOrders(input: {
      after: ConfirmedOrderCursor | null;
    }): Promise<StartBatchResult> {
      const { settings } = deps;
      const progress = { namespace: activityInfo().namespace, graceMs: settings.graceMs };
      // Since the last complete sweep only (src/db/reconcileProgress.ts), within the look-back window.
      const notBefore = await sweepNotBefore(deps.db, {
        ...progress,
        lookbackMs: settings.lookbackMs,
        confirmedSince: settings.confirmedSince,
      });
      const batch = await findConfirmedOrdersWithoutMail(deps.db, {
        graceMs: settings.graceMs,
        notBefore,
        after: input.after,
        limit: settings.batchSize,
      });
      // The workflows go to the queue this worker polls; the same id policy as the order service's start, so
      // a start that raced with it (or with an earlier sweep) is reported as already started, and sends nothing.
      const taskQueue = activityInfo().taskQueue;
      let started = 0;
      let restarted = 0;
      const closedWithoutRow: string[] = [];
      const conflicts: WorkflowIdConflict[] = [];
      for (const orderId of batch.orderIds) {
        try {
          const result = await startOrderConfirmationMail(deps.temporal, orderId, {
            taskQueue,
            // A run that closed before its first claim made no row, and nothing else will start the order: it
            // is started again, once. A run that this sweep itself started again and that closed row-less too
            // is named instead: starting it a third time would only repeat what stopped it.
            restartClosedRun: {
              by: 'reconciliation sweep',
              approve: async (closed) => {
                if ((await readMailLog(deps.db, orderId)) !== null) return false;
                if (closed.memo?.[RESTARTED_BY_MEMO] !== undefined) {
                  closedWithoutRow.push(orderId);
                  return false;
                }
                return true;
              },
            },
          });
          if (result.status === 'started') {
            started += 1;
            log.info('Reconciliation started a missed order mail', { orderId, runId: result.runId });
          } else if (result.status === 'restarted') {
            restarted += 1;
            log.info('Reconciliation started again an order mail whose run closed before its first claim', {
              orderId,
              runId: result.runId,
              closedRunId: result.closedRunId,
              closedRunStatus: result.closedRunStatus,
            });
          }
        } catch (error) {
          if (!(error instanceof OrderMailWorkflowIdTakenError)) throw error;
          // Not ours to start, and retrying will not free the id: report it, and go on with the batch.
          log.warn('Order mail not started: its workflow id is held by another workflow type', {
            orderId,
            workflowType: error.workflowType,
            runId: error.runId,
          });
          conflicts.push({ orderId, workflowType: error.workflowType, runId: error.runId });
        }
        heartbeat();
      }
      const metrics = deps.metrics ?? noOrderMailMetrics;
      for (const _ of closedWithoutRow) metrics.orderLeftWithoutMail('closed-without-row');
      for (const _ of conflicts) metrics.orderLeftWithoutMail('workflow-id-taken');
      if (closedWithoutRow.length > 0) {
        log.warn('Order mails whose restarted run closed again before its first claim: not started again', {
          orders: closedWithoutRow,
          hint: 'see why the run closed (npm run ops -- status <orderId>), fix it, then npm run ops -- retry',
        });
      }
      // The last batch of this sweep: every order up to the grace was looked at, and each one found missing
      // was started (or is a conflict, logged and counted above, which no later sweep could start either).
      if (batch.next === null) await advanceReconcileProgress(deps.db, progress);
      return {
        found: batch.orderIds.length,
        started,
        restarted,
        closedWithoutRow,
        alreadyStarted:
          batch.orderIds.length - started - restarted - closedWithoutRow.length - conflicts.length,
        conflicts,
        next: batch.next,
      };
    },

    /**
     * Rows in 'sending' whose claiming run is closed. Temporal runs at most one open run per workflow id, and a
     * closed run never touches its row again, so such a row would stay 'sending' until someone acted.
     */
    async findStuckMailClaims(): Promise<StuckClaimsResult> {
      const namespace = activityInfo().namespace;
      const rows = await listQuietSendingRows(deps.db, {
        namespace,
        olderThanMs: deps.settings.graceMs,
        limit: deps.settings.batchSize,
      });
      const stuck: StuckClaim[] = [];
      const verification = mail.settings.verification ?? null;
      // Nobody waited for a closed run's send: its request may have been under way until its send timeout.
      const requestMayLastMs = mail.settings.sendTimeoutMs;
      let youngerThanSettleDelay = 0;
      for (const row of rows) {
        if (isOutsideWriterToken(row.claimToken)) {
          // The old system's attempt, quiet for the grace period: it has no fence, so it counts as dispatched
          // and its outcome is unknown. It is settled by the policy like a closed run's dispatched claim.
          // VERIFICATION HOOK (branch verify): such a request carries no send key of ours, but it does carry
          // metadata.order_id; where the provider can be asked by that, this is where to ask before the policy.
          stuck.push({
            orderId: row.orderId,
            workflowId: row.orderId,
            runId: row.claimToken,
            runStatus: OUTSIDE_WRITER,
            dispatched: row.dispatchedAt !== null,
            attempts: row.attempts,
            claimedAt: row.claimedAt.toISOString(),
            seen: seenRowOf(row),
            sendKey: null,
          });
          continue;
        }
        const token = parseClaimToken(row.claimToken);
        // An operator's token is never left 'sending'; another namespace's run is that namespace's sweep's.
        if (token === null || token.namespace !== namespace) continue;
        const run = { workflowId: token.workflowId, runId: token.runId };
        const runStatus = await runStatusOf(deps.temporal, run.workflowId, run.runId);
        // (A later run of this order may be open, a reset's: its claim would take this one over. Settling it
        // here is the same: the sweep asks the provider as that run would, and that run's claim then finds
        // the row settled and reclaims it, or finds it sent.)
        if (runStatus !== 'RUNNING') {
          // Where the provider will be asked, ask once its log can be trusted: a younger request waits for a
          // later sweep (every few minutes) rather than be settled by the policy now.
          if (verification !== null && row.dispatchedAt !== null) {
            const sinceDispatchMs = await timeSinceAttemptDispatch(deps.db, {
              orderId: row.orderId,
              claimToken: row.claimToken,
              attempt: row.attempts,
            });
            // The attempt's own send timeout, as its fence recorded it (src/evidence/evidenceRules.ts,
            // notFoundCountsFrom); this worker's only for a row dispatched before it was recorded.
            const mayLastMs = row.dispatchSendTimeoutMs ?? requestMayLastMs;
            if (sinceDispatchMs !== null && sinceDispatchMs < mayLastMs + verification.settleDelayMs) {
              youngerThanSettleDelay += 1;
              continue;
            }
          }
          stuck.push({
            orderId: row.orderId,
            ...run,
            runStatus,
            dispatched: row.dispatchedAt !== null,
            attempts: row.attempts,
            claimedAt: row.claimedAt.toISOString(),
            seen: seenRowOf(row),
            // The key the request really carried, as its fence recorded it; computed only for an older row.
            sendKey:
              row.dispatchSendKey ??
              orderConfirmationIdempotencyKey(
                mail.deploymentId ?? DEFAULT_DEPLOYMENT_ID,
                row.orderId,
                row.resendCount,
              ),
          });
        }
        heartbeat();
      }
      return {
        examined: rows.length,
        stuck,
        more: rows.length === deps.settings.batchSize,
        unknownOutcomePolicy: mail.settings.unknownOutcomePolicy,
        verification,
        requestMayLastMs,
        youngerThanSettleDelay,
      };
    },

    /**
     * Settles one claim of a closed run as the sweep decided (src/db/orderMailClaim.ts, fenced like the claim):
     * released if it never dispatched, settled by the policy if it did. 'changed' when someone claimed or
     * settled the row since the sweep looked: then there is nothing left to do.
     */
    async settleClosedRunClaim(input: {
      claim: StuckClaim;
      decision: UnknownOutcomeDecision;
      /** What the provider said of the dispatched request, when the sweep asked it. */
      answer?: VerificationAnswer;
    }): Promise<ClosedRunSettlement> {
      const { claim, decision } = input;
      const why =
        claim.runStatus === OUTSIDE_WRITER
          ? `the old system's claim (${claim.runId}) recorded no outcome for ${deps.settings.graceMs} ms and was settled by the reconciliation sweep`
          : `the run holding this claim (${claim.runId}) was ${claim.runStatus.toLowerCase()} and settled by the reconciliation sweep`;
      const result = await settleClosedRunClaim(deps.db, claim.seen, {
        decision,
        answer: input.answer,
        why,
        recordedBy: `reconciliation sweep ${mail.workerIdentity}`,
      });
      log.info('Reconciliation settled a claim of a closed run', {
        orderId: claim.orderId,
        runId: claim.runId,
        runStatus: claim.runStatus,
        dispatched: claim.dispatched,
        result: result.kind,
        decision: decision.kind,
      });
      return result;
    },
  };
}

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;

async function runStatusOf(client: Client, workflowId: string, runId: string): Promise<string> {
  try {
    return (await client.workflow.getHandle(workflowId, runId).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
}
