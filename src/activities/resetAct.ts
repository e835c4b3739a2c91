// A reset made outside the ops CLI, recorded as observed by the claim of the run it started
// (docs/design.md §4, "Resets seen in history").
import { followsAnotherRunUnrecorded, insertObservedReset, snapshotMailLog } from '../db/operatorActs';
import { OPS_RETRY_RESET_REASON_PREFIX, type ResetOfRun } from '../temporal/resetHistory';
import type { ActivityDependencies } from './dependencies';

export interface RunOfClaim {
  orderId: string;
  workflowId: string;
  runId: string;
  workflowScope: string;
  claimToken: string;
}

/** Records the reset that started this run, if one did and none is recorded; returns the reset. */
export async function recordResetOfRun(
  deps: ActivityDependencies,
  run: RunOfClaim,
): Promise<ResetOfRun | null> {
  const readResetOfRun = deps.readResetOfRun;
  if (readResetOfRun === undefined) return null;
  if (!(await followsAnotherRunUnrecorded(deps.db, run))) return null;
  const reset = await readResetOfRun(run.workflowId, run.runId);
  if (reset === null || reset.reason.startsWith(OPS_RETRY_RESET_REASON_PREFIX)) return null;
  await insertObservedReset(deps.db, {
    orderId: run.orderId,
    newRunId: reset.newRunId,
    baseRunId: reset.baseRunId,
    reason: reset.reason === '' ? '(no reason given)' : reset.reason,
    temporalIdentity: reset.identity === '' ? '(no identity recorded)' : reset.identity,
    resetEventId: reset.eventId === '' ? null : Number(reset.eventId),
    resetAt: reset.resetAt === '' ? null : reset.resetAt,
    baseRunTerminated: reset.baseRunTerminated,
    workerIdentity: deps.workerIdentity ?? null,
    rowAfter: await snapshotMailLog(deps.db, run.orderId),
  });
  return reset;
}
