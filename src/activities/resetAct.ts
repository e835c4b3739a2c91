// A reset made outside the ops CLI (the Web UI's Reset, `temporal workflow reset`) leaves a row in
// order_mail_observed_resets, so `ops status` shows it beside the operators' acts and its reason outlives
// Temporal's retention. It is the worker's observation, under the worker's login, of what Temporal's history
// says: not an operator's act (the workers' role may write none, migration 0057).
//
// Who and when: the claim of the run the reset started. That run exists only because of the reset, its claim
// is the first thing it does, and the claim already knows whether the row (or the audit trail) names an
// earlier run of the same workflow id; only then is the history read. A sweep could find resets too, but only
// by reading the history of every run it looks at, and only minutes later. The act is written after the
// claim, in the same activity: if the write (or the history read) fails, the activity fails and its retry
// finds its own claim ('own-claim') and writes the row then; the unique key keeps it to one per run.
//
// A reset made by `npm run ops -- retry` is recorded by the CLI itself, as a 'retry' act naming the new run,
// right after Temporal accepted it: the claim skips a run that has that act, and a reset whose reason begins
// with the CLI's prefix (the new run may claim before the CLI's insert lands). Anyone can type that prefix in
// the Web UI's reason box, and such a reset then leaves no row here: the reason stays in Temporal's history.
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
