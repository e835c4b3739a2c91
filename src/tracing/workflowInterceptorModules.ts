// What every workflow bundle is built with (src/cli/bundle-workflows.ts, the worker's bundle at start-up,
// the tests' global setup), so that a trace goes through the workflow whichever way the bundle was made.
// Without an extension: webpack finds the .ts under the sources and the .js in dist/.
import path from 'node:path';

export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [path.join(__dirname, 'workflowInterceptors')];
