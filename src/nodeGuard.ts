// Imported first by every entry point, and acts on import on purpose: on an older Node other imports fail
// without naming Node (docs/production.md, "A worker process"). The minimum is package.json's `engines`.

export const MINIMUM_NODE_MAJOR = 24;

/** Null when `version` (as in process.versions.node) may run this build; otherwise what to tell the operator. */
export function unsupportedNodeMessage(version: string, executable: string): string | null {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MINIMUM_NODE_MAJOR) return null;
  return (
    `order-confirmation-mail needs Node ${MINIMUM_NODE_MAJOR} or later; this is Node v${version} ` +
    `(${executable}). Nothing was started. Run it on Node ${MINIMUM_NODE_MAJOR} (the worker image's, ` +
    `deploy/stack.env's NODE_VERSION), or in a checkout through the pinned one: bash scripts/with-node.sh <command>.`
  );
}

const refusal = unsupportedNodeMessage(process.versions.node, process.execPath);
if (refusal !== null) {
  console.error(refusal);
  process.exit(1);
}
