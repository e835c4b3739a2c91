/** A link to the order's workflow in the Temporal Web UI (the run, when known; else a filtered list). */
export function workflowUiUrl(
  uiBaseUrl: string,
  namespace: string,
  workflowId: string,
  runId: string | null,
): string {
  const base = `${uiBaseUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows`;
  if (runId !== null) return `${base}/${encodeURIComponent(workflowId)}/${encodeURIComponent(runId)}/history`;
  return `${base}?query=${encodeURIComponent(`WorkflowId="${workflowId}"`)}`;
}
