// The product as `npm run build` makes it, in a temporary copy of what the image's build stage copies
// (package files, tsconfigs, src/), with the checkout's node_modules linked in: for tests that run a built
// command as its own process (test/build/productBuild.test.ts checks the production install itself).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PROJECT_ROOT = path.join(__dirname, '..', '..');

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
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src']) {
    await cp(path.join(PROJECT_ROOT, entry), path.join(directory, entry), { recursive: true });
  }
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(directory, 'node_modules'), 'dir');
  await run('npm', ['run', '--silent', 'build'], { cwd: directory });
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
