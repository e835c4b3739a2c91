// Imported FIRST by every production entry point (the worker, webhooks, migrate, db-roles, setup, ops,
// prune, start-mail), so it runs before any other import: on an older Node those imports fail with errors
// that name neither Node nor its version (undici 8 reads zlib's zstd, which Node 20 lacks), or, worse, work
// half-way. The one module that acts on import, on purpose: nothing else may run first.
//
// The minimum is package.json's `engines` (test/build/nodeVersion.test.ts holds them equal): the Node this
// build is tested on. The npm scripts that run tests and tools pick that Node themselves
// (scripts/with-node.sh); a production command runs on whatever `node` the host gives it.

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
