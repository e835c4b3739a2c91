// Claim tokens (docs/design.md §10): a run's '<namespace>/<workflow id>/<run id>', 'operator:…', 'legacy:…'.

/** '<namespace>/<workflow id>/': every run of a workflow id shares it. */
export function workflowScopeOf(namespace: string, workflowId: string): string {
  return `${namespace}/${workflowId}/`;
}

export function claimTokenOf(namespace: string, workflowId: string, runId: string): string {
  return `${workflowScopeOf(namespace, workflowId)}${runId}`;
}

/**
 * A token the trigger gave an outside writer's claim (migration 0009): no fence, so counted dispatched, never
 * taken over, settled by the sweep by the policy (docs/adoption.md). 'legacy:adopted': adopted rows.
 */
export function isOutsideWriterToken(token: string): boolean {
  return token.startsWith('legacy:');
}

/**
 * The run a token names, with its namespace (a run is known only in its own); null for other tokens. The
 * namespace holds no '/', so the first one ends it.
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
