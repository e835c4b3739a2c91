// The claim token names the run that holds an order's row (docs/design.md §10): '<namespace>/<workflow id>/<run
// id>' for a run of this service, 'operator:…' for an operator's settlement, 'legacy:…' for an outside writer's.
// Pure: the claim, the sweep and the tests all read tokens with these.

/** '<namespace>/<workflow id>/': every run of a workflow id shares it. */
export function workflowScopeOf(namespace: string, workflowId: string): string {
  return `${namespace}/${workflowId}/`;
}

export function claimTokenOf(namespace: string, workflowId: string, runId: string): string {
  return `${workflowScopeOf(namespace, workflowId)}${runId}`;
}

/**
 * A claim token that an outside writer's claim got from order_mail_log's trigger (migration 0009): the case
 * study's old workers, or anyone writing with its statements. Such a claim has no fence, so it counts as
 * dispatched; this service never takes it over, and the reconciliation sweep settles it by the policy once
 * it has been quiet (docs/adoption.md). 'legacy:adopted' marks the rows adoption brought in.
 */
export function isOutsideWriterToken(token: string): boolean {
  return token.startsWith('legacy:');
}

/**
 * The run a claim token names, with its namespace; null for a token that is not a run's (an operator's, an
 * outside writer's). A namespace name holds no '/', so the first one ends it; a workflow id may hold any.
 * The namespace matters: two namespaces may share one database, and a run is only known in its own.
 */
export function parseClaimToken(
  token: string,
): { namespace: string; workflowId: string; runId: string } | null {
  const first = token.indexOf('/');
  const last = token.lastIndexOf('/');
  if (token.startsWith('operator:') || first <= 0 || last <= first) return null;
  return {
    namespace: token.slice(0, first),
    workflowId: token.slice(first + 1, last),
    runId: token.slice(last + 1),
  };
}
