// What every workflow bundle is built with (src/cli/bundle-workflows.ts, the worker's bundle at start-up,
// the tests' global setup), so that a trace goes through the workflow whichever way the bundle was made.
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [require.resolve('./workflowInterceptors')];
