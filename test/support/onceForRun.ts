// Work done once per test run for every file that needs it (a build, a bundle): the first file to ask does it
// under a lock, the others wait for it to finish, and all of them fail with its error if it failed.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Runs `make` in the first caller to reach `name` (a path in a folder of the run), and waits in every other
 * until it is done, for at most `waitMs`. `make` writes its output beside `name`; `name.done` says it is whole.
 */
export async function onceForRun(name: string, make: () => Promise<void>, waitMs: number): Promise<void> {
  const done = `${name}.done`;
  const failed = `${name}.failed`;
  if (await takeLock(`${name}.lock`)) {
    try {
      await make();
    } catch (error) {
      await writeFile(failed, error instanceof Error ? error.message : String(error));
      throw error;
    }
    await writeFile(done, '');
    return;
  }
  const deadline = Date.now() + waitMs;
  while (!existsSync(done)) {
    if (existsSync(failed))
      throw new Error(`${name} failed in another file: ${await readFile(failed, 'utf8')}`);
    if (Date.now() > deadline) throw new Error(`${name} was not ready after ${waitMs} ms`);
    await sleep(200);
  }
}

/** True for the one caller that made the lock folder; another file made it first otherwise. */
async function takeLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}
