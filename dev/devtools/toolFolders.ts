// Where scripts/setup.sh installs what it fetches or builds, read as setup.sh reads it (an empty variable counts
// as unset), and the check that a tool is there.
import { accessSync, constants, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** $XDG_CACHE_HOME (else ~/.cache)/order-confirmation-mail: the Python peers' environments, tools/ below. */
export function setupCacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(cache, 'order-confirmation-mail');
}

/** $STACK_TOOLS_DIR, else tools/ in setupCacheDirectory: one folder per tool and version. */
export function stackToolsDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env.STACK_TOOLS_DIR || path.join(setupCacheDirectory(env), 'tools');
}

export function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
