// The workflows bundled with a test interceptor module of their own (the run's shared bundle must have none),
// made once per test run: the first file to ask bundles it under a lock, into the run's bundle folder (beside
// the shared bundle, removed with it at teardown); the others wait for the file and read it.
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { inject } from 'vitest';
import { takeLock } from './builtProduct';

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
  const failed = `${file}.failed`;
  if (!(await takeLock(`${file}.lock`))) {
    const deadline = Date.now() + WAIT_MS;
    while (!existsSync(file)) {
      // Bundled here then, so this file reports the bundler's error too.
      if (existsSync(failed)) return bundle();
      if (Date.now() > deadline) throw new Error(`${file} was not bundled after ${WAIT_MS} ms`);
      await sleep(200);
    }
    return readFile(file, 'utf8');
  }
  try {
    const code = await bundle();
    // Renamed into place whole: a waiting file never reads half of it.
    await writeFile(`${file}.partial`, code);
    await rename(`${file}.partial`, file);
    return code;
  } catch (error) {
    await writeFile(failed, error instanceof Error ? error.message : String(error));
    throw error;
  }
}
