// The sweep's second job (G2): rows left 'sending' by a closed run or an outside writer.
import { activityInfo, heartbeat } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { isOutsideWriterToken, parseClaimToken } from '../db/claimToken';
import { seenRowOf } from '../mailRow/statements';
import {
  listQuietSendingRows,
  timeSinceAttemptDispatch,
  type MailLogRow,
  type QuietRowCursor,
} from '../db/orderMailLog';
import { DEFAULT_DEPLOYMENT_ID } from '../evidence/messageIdentity';
import { orderConfirmationSendKey } from '../mail/sendKey';
import { msUntilNotFoundCounts } from '../shared/workflowSettings';
import {
  OUTSIDE_WRITER,
  type SweepDependencies,
  type SweepMailSettings,
  type Orphan,
  type OrphansFound,
} from './sweepTypes';

/** Pages of quiet 'sending' rows one sweep reads at most (docs/design.md §7). */
const MAX_QUIET_ROW_PAGES = 20;

export function createFindOrphans(deps: SweepDependencies, mail: SweepMailSettings) {
  /** 'sending' rows whose run is closed: a closed run never touches its row again (docs/design.md §7). */
  return async function findOrphans(): Promise<OrphansFound> {
    const namespace = activityInfo().namespace;
    const limit = deps.settings.batchSize;
    const orphans: Orphan[] = [];
    const verification = mail.settings.verification ?? null;
    // Nobody waited for an orphan's send: its request may have been under way until its send timeout.
    const requestMayLastMs = mail.settings.sendTimeoutMs;
    let youngerThanSettleDelay = 0;
    let examined = 0;
    // Open runs' quiet rows are passed over page after page, so they cannot hide an orphan (§7).
    let after: QuietRowCursor | null = null;
    let more = false;
    for (let page = 0; page < MAX_QUIET_ROW_PAGES && orphans.length < limit; page++) {
      const { rows, next } = await listQuietSendingRows(deps.db, {
        namespace,
        olderThanMs: deps.settings.graceMs,
        limit,
        after,
      });
      examined += rows.length;
      const left = await examine(rows);
      after = next;
      more = left || next !== null;
      if (next === null || left) break;
    }
    return {
      examined,
      stuck: orphans,
      more,
      unknownOutcomePolicy: mail.settings.unknownOutcomePolicy,
      verification,
      requestMayLastMs,
      youngerThanSettleDelay,
    };

    /** Adds the page's orphans; true when the batch filled before the page's end. */
    async function examine(rows: MailLogRow[]): Promise<boolean> {
      for (const [index, row] of rows.entries()) {
        heartbeat();
        if (orphans.length >= limit) return index < rows.length;
        if (isOutsideWriterToken(row.claimToken)) {
          // The old system's claim has no fence and no key of ours: counted dispatched, settled by the policy (§9).
          orphans.push({
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
        // A reset's later run may be open: settling here is what its own claim would do.
        if (runStatus !== 'RUNNING') {
          // Asked only once its log can be trusted: a younger request waits for a later sweep, not the policy.
          if (verification !== null && row.dispatchedAt !== null) {
            const sinceDispatchMs = await timeSinceAttemptDispatch(deps.db, {
              orderId: row.orderId,
              claimToken: row.claimToken,
              attempt: row.attempts,
            });
            // The attempt's own recorded send timeout; this worker's only for a row dispatched before it was recorded.
            const mayLastMs = row.dispatchSendTimeoutMs ?? requestMayLastMs;
            const untilMs =
              sinceDispatchMs === null
                ? 0
                : msUntilNotFoundCounts(sinceDispatchMs, mayLastMs, verification.settleDelayMs);
            if (untilMs > 0) {
              youngerThanSettleDelay += 1;
              continue;
            }
          }
          orphans.push({
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
              orderConfirmationSendKey(
                mail.deploymentId ?? DEFAULT_DEPLOYMENT_ID,
                row.orderId,
                row.resendCount,
              ),
          });
        }
      }
      return false;
    }
  };
}

async function runStatusOf(client: Client, workflowId: string, runId: string): Promise<string> {
  try {
    return (await client.workflow.getHandle(workflowId, runId).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
}
