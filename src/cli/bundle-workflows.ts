// `node dist/cli/bundle-workflows.js <output.js>`, after `npm run build`: bundles the workflow code once, at
// build time (the Dockerfile does), so a worker started with WORKFLOW_BUNDLE_PATH skips webpack at start-up.
// Two bundles: <output.js> with the tracing interceptors, and beside it the one without them that a worker with
// tracing off runs (untracedBundlePathOf). Made by the same @temporalio/worker version that runs them; the
// image guarantees that.
import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { untracedBundlePathOf, WORKFLOW_INTERCEPTOR_MODULES } from '../tracing/workflowInterceptorModules';

async function main(): Promise<void> {
  const output = process.argv[2];
  if (output === undefined) throw new Error('usage: bundle-workflows <output.js>');
  const workflowsPath = require.resolve('../workflows');
  const traced = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
  });
  await writeFile(output, traced.code);
  console.log(`Workflow bundle written to ${output} (${traced.code.length} bytes)`);
  const untracedPath = untracedBundlePathOf(output);
  const untraced = await bundleWorkflowCode({ workflowsPath });
  await writeFile(untracedPath, untraced.code);
  console.log(`Workflow bundle for tracing off written to ${untracedPath} (${untraced.code.length} bytes)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
