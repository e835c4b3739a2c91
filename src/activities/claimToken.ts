import { activityInfo } from '@temporalio/activity';

export interface ClaimIdentity {
  /** '<namespace>/<workflow id>/<run id>' of the run this activity serves: who holds the claim. */
  claimToken: string;
  /** '<namespace>/<workflow id>/': every run of this workflow id shares it (DESIGN.md §4 rule 3). */
  workflowScope: string;
  /**
   * When Temporal first scheduled this claim activity (server time). A later run's claim is always scheduled
   * later, so a stale claim from a closed run can be told from the open run's (migration 0003).
   */
  claimScheduledAt: Date;
}

/**
 * Derives the claim token from the activity's own context rather than from an argument, so no caller can hand
 * an activity somebody else's token. A reset starts a new run id, hence a new token; the workflow id stays.
 */
export function currentClaimIdentity(): ClaimIdentity {
  const info = activityInfo();
  const execution = info.workflowExecution;
  if (!execution) throw new Error('Order mail activities must run inside a workflow.');
  const workflowScope = `${info.namespace}/${execution.workflowId}/`;
  return {
    claimToken: `${workflowScope}${execution.runId}`,
    workflowScope,
    claimScheduledAt: new Date(info.scheduledTimestampMs),
  };
}
