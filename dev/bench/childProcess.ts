// Starting and stopping the processes the benchmark measures. Their output goes to files, not pipes: a pipe
// would make this process read every log line the workers print, and charge that CPU to the harness.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const PROJECT_ROOT = path.join(__dirname, '..', '..');

/**
 * Children to SIGKILL if this process exits without stopping them (an error, Ctrl-C): one 'exit' listener
 * for all of them, however many workers a run starts.
 */
export const killOnExit = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of killOnExit) child.kill('SIGKILL');
});

export interface LoggedProcess {
  name: string;
  child: ChildProcess;
  pid: number;
  logPath: string;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns `node --import tsx <script>` with its output in `logPath`, and waits until the log shows `readyText`. */
export async function spawnTsProcess(options: {
  name: string;
  script: string;
  env: Record<string, string>;
  logPath: string;
  readyText: string;
  startupTimeoutMs: number;
  /** A module imported before the script (the bench's switches: dev/bench/switches/preload.ts). */
  preload?: string;
  /** Where the script and its modules are found; default this checkout (release-2.0: 2.0's checkout). */
  cwd?: string;
}): Promise<LoggedProcess> {
  const logFd = openSync(options.logPath, 'a');
  // node --import tsx rather than the tsx CLI: the CLI runs the script in a child of its own, so the pid we
  // measure would be the wrapper's, not the worker's.
  const preload = options.preload === undefined ? [] : ['--import', `./${options.preload}`];
  const child = spawn(process.execPath, ['--import', 'tsx', ...preload, options.script], {
    cwd: options.cwd ?? PROJECT_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  if (child.pid === undefined) throw new Error(`${options.name}: could not start ${options.script}`);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      exitCode = code ?? (signal === null ? null : -1);
      resolve(exitCode);
    }),
  );
  killOnExit.add(child);

  const handle: LoggedProcess = {
    name: options.name,
    child,
    pid: child.pid,
    logPath: options.logPath,
    exited,
    async stop(graceMs = 15_000) {
      killOnExit.delete(child);
      if (exitCode !== undefined) return;
      child.kill('SIGTERM');
      const escalate = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(escalate);
    },
  };

  const deadline = Date.now() + options.startupTimeoutMs;
  for (;;) {
    const log = readLog(options.logPath);
    if (log.includes(options.readyText)) return handle;
    if (exitCode !== undefined) {
      throw new Error(`${options.name} exited (${exitCode}) before it was ready:\n${log.slice(-3000)}`);
    }
    if (Date.now() > deadline) {
      await handle.stop(1_000);
      throw new Error(
        `${options.name} was not ready within ${options.startupTimeoutMs} ms:\n${log.slice(-3000)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function readLog(logPath: string): string {
  try {
    return readFileSync(logPath, 'utf8');
  } catch {
    return '';
  }
}
