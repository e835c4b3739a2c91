import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { inject } from 'vitest';

const PROJECT_ROOT = path.join(__dirname, '..', '..');

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything the process printed, for failure messages. */
  output(): string;
  /** What it printed on stdout only (its log lines; stderr is kept apart, where a chunk may cut a line). */
  stdout(): string;
  /** Signals the worker (a no-op once it has exited). */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the worker has said it started polling. */
  started: Promise<void>;
  exited: Promise<number | null>;
}

/**
 * node's arguments that run one of the product's entry points (`worker`, `cli/start-mail`): dist/<entry>.js of
 * the run's compiled product, else src/<entry>.ts through tsx's loader.
 */
export function productCommand(entry: string): string[] {
  const compiled = inject('compiledProduct') as string | undefined;
  if (compiled !== undefined && compiled !== '') return [path.join(compiled, 'dist', `${entry}.js`)];
  // node --import tsx (not the tsx CLI): the CLI runs the script in a child of its own, which a SIGKILL of
  // the CLI would leave running.
  return ['--import', 'tsx', `src/${entry}.ts`];
}

/**
 * Runs the worker (src/worker.ts, compiled once for the run as `npm start` runs it) as a real process, with the
 * given environment, as this process's direct child: no wrapper program in between, whose death could leave
 * the worker orphaned after the test (a shifted clock comes in through the environment: LD_PRELOAD of
 * libfaketime).
 */
export function spawnWorkerProcess(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, productCommand('worker'), {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
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
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  return { child, output: () => output, stdout: () => stdout, kill, started, exited };
}
