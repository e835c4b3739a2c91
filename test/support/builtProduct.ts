// The product as `npm run build` makes it, in a temporary copy of what the image's build stage copies
// (package files, tsconfigs, src/), with the checkout's node_modules linked in: for tests that run a built
// command as its own process (test/build/productBuild.test.ts checks the production install itself).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { onceForRun } from './onceForRun';

const run = promisify(execFile);
const PROJECT_ROOT = path.join(__dirname, '..', '..');
/** What the image's build stage copies before `npm run build`. */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src'];
// A build is tens of seconds of CPU on a loaded 2-core machine; a file waiting for another's has the headroom.
const BUILD_WAIT_MS = 240_000;

/** A copy of the build's inputs in `directory`, with the checkout's node_modules linked in. */
async function copyBuildInputs(directory: string): Promise<void> {
  for (const entry of BUILD_INPUTS) {
    await cp(path.join(PROJECT_ROOT, entry), path.join(directory, entry), { recursive: true });
  }
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(directory, 'node_modules'), 'dir');
}

/**
 * Copies the build's inputs into `directory` and gives it the dist/ `npm run build` makes from them: built once
 * per test run in the folder the global setup provides, and copied by every file that needs it (the first file
 * to ask builds it under a lock, the others wait for it). Where no folder is provided (the stack suite), it is
 * built in place.
 */
export async function buildInto(directory: string): Promise<void> {
  await copyBuildInputs(directory);
  const cache = inject('productBuildCache') as string | undefined;
  if (cache === undefined || cache === '') {
    await run('npm', ['run', '--silent', 'build'], { cwd: directory });
    return;
  }
  await cp(await sharedDist(cache), path.join(directory, 'dist'), { recursive: true });
}

async function sharedDist(cache: string): Promise<string> {
  const product = path.join(cache, 'product');
  await onceForRun(
    product,
    async () => {
      await mkdir(product);
      await copyBuildInputs(product);
      await run('npm', ['run', '--silent', 'build'], { cwd: product });
      await unlink(path.join(product, 'node_modules'));
    },
    BUILD_WAIT_MS,
  );
  return path.join(product, 'dist');
}

export interface BuiltProduct {
  directory: string;
  /** `npm run --silent <script> -- args`, waited for. */
  npm(
    script: string,
    env: Record<string, string>,
    ...args: string[]
  ): Promise<{ stdout: string; stderr: string }>;
  /** `npm run <script>` left running, in a process group of its own; its output collected. */
  spawnNpm(script: string, env: Record<string, string>): RunningCommand;
  remove(): Promise<void>;
}

export interface RunningCommand {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** SIGTERM to the group, SIGKILL after 10 s. */
  stop(): Promise<number | null>;
}

export async function buildProduct(): Promise<BuiltProduct> {
  const directory = await mkdtemp(path.join(tmpdir(), 'built-product-'));
  await buildInto(directory);
  const envOf = (env: Record<string, string>) => ({ ...process.env, ...env });
  return {
    directory,
    npm: (script, env, ...args) =>
      run('npm', ['run', '--silent', script, ...(args.length > 0 ? ['--', ...args] : [])], {
        cwd: directory,
        env: envOf(env),
      }),
    spawnNpm(script, env) {
      const child = spawn('npm', ['run', '--silent', script], {
        cwd: directory,
        env: envOf(env),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      return {
        child,
        output: () => text,
        exited,
        async stop() {
          if (child.exitCode === null && child.pid !== undefined) {
            try {
              process.kill(-child.pid, 'SIGTERM');
            } catch {
              // already gone
            }
            const timer = setTimeout(() => {
              try {
                process.kill(-child.pid!, 'SIGKILL');
              } catch {
                // already gone
              }
            }, 10_000);
            await exited;
            clearTimeout(timer);
          }
          return exited;
        },
      };
    },
    remove: () => rm(directory, { recursive: true, force: true }),
  };
}
