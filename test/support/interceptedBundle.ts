// The workflows bundled with a test interceptor module of their own (the run's shared bundle must have none),
// made once per test run (test/support/onceForRun.ts) into the run's bundle folder, beside the shared bundle and
// removed with it at teardown.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { inject } from 'vitest';
import { onceForRun } from './onceForRun';

const WORKFLOWS = path.join(__dirname, '..', '..', 'src', 'workflows', 'index.ts');
// Webpack takes seconds of CPU on a loaded 2-core machine; a file waiting for another's has the headroom.
const WAIT_MS = 120_000;

/** The code of src/workflows bundled with `interceptorModule` as its one workflow interceptor module. */
export async function bundleWithInterceptor(interceptorModule: string): Promise<string> {
  const bundle = async (): Promise<string> => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: WORKFLOWS,
      workflowInterceptorModules: [interceptorModule],
      logger: new DefaultLogger('WARN'),
    });
    return code;
  };
  const shared = inject('workflowBundlePath');
  if (shared === '') return bundle();
  const file = path.join(path.dirname(shared), `with-${path.parse(interceptorModule).name}.js`);
  await onceForRun(file, async () => writeFile(file, await bundle()), WAIT_MS);
  return readFile(file, 'utf8');
}
