import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const PROJECT_ROOT = path.join(__dirname, '..', '..');

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything the process printed, for failure messages. */
  output(): string;
  /** What it printed on stdout only (its log lines; stderr is kept apart, where a chunk may cut a line). */
  stdout(): string;
  /** Signals the worker, and the wrapper around it if there is one (`child.kill` would reach the wrapper only). */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the worker has said it started polling. */
  started: Promise<void>;
  exited: Promise<number | null>;
}

/**
 * Runs `src/worker.ts` as a real process (what `npm start` runs compiled), with the given environment.
 * `wrapper` runs it under another program (e.g. `faketime -f +30s`). faketime forks the worker as its child
 * rather than exec'ing it, so a signal to the wrapper alone left the worker running, orphaned, after the
 * test; with a wrapper the process runs in a group of its own, and `kill` signals the whole group.
 */
export function spawnWorkerProcess(env: Record<string, string>, wrapper: string[] = []): WorkerProcess {
  // node --import tsx (not the tsx CLI): the CLI runs the script in a child of its own, which a SIGKILL of
  // the CLI would leave running.
  const command = [...wrapper, process.execPath, '--import', 'tsx', 'src/worker.ts'];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: wrapper.length > 0,
  });
  let output = '';
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const started = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"message":"Worker started"')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before starting:\n${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const kill = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    if (wrapper.length === 0) {
      child.kill(signal);
      return;
    }
    // The group outlives the wrapper if the worker does: signal it even when the wrapper has exited.
    try {
      process.kill(-child.pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  };
  return { child, output: () => output, stdout: () => stdout, kill, started, exited };
}
