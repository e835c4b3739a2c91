// `node dist/cli/bundle-workflows.js <output.js>`, after `npm run build`: bundles the workflow code once, at
// build time (the Dockerfile does), so a worker started with WORKFLOW_BUNDLE_PATH skips webpack at start-up.
// The bundle must be made by the same @temporalio/worker version that runs it; the image guarantees that.
import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../tracing/workflowInterceptorModules';

async function main(): Promise<void> {
  const output = process.argv[2];
  if (output === undefined) throw new Error('usage: bundle-workflows <output.js>');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
  });
  await writeFile(output, code);
  console.log(`Workflow bundle written to ${output} (${code.length} bytes)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
