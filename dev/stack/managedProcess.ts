// One long-running child of the stack (the Temporal server, the UI server, a worker): its output goes to a
// log file and a short tail kept for error messages, and stop() ends it with SIGTERM, then SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

const OUTPUT_TAIL_CHARS = 6_000;

export interface ManagedProcess {
  name: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  /** The last few KB of output. */
  output(): string;
  /** null while running; how it ended otherwise. */
  exitDescription(): string | null;
  exited: Promise<void>;
  /** SIGTERM (or `signal`), then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(options?: { graceMs?: number; signal?: NodeJS.Signals }): Promise<void>;
}

export function startManagedProcess(options: {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  logFile: string;
  /** Echo the output to this process's stderr too. */
  echo?: boolean;
}): ManagedProcess {
  const log: WriteStream = createWriteStream(options.logFile, { flags: 'a' });
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const onData = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    log.write(chunk);
    if (options.echo === true) process.stderr.write(chunk);
  };
  // Reading both pipes matters on its own too: a full pipe would block the child.
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);

  let exitDescription: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitDescription = `${options.name} exited with ${signal ?? `code ${code}`}`;
      resolve();
    });
    child.once('error', (error) => {
      exitDescription = `${options.name} could not start: ${error.message}`;
      resolve();
    });
  }).then(() => new Promise<void>((resolve) => log.end(resolve)));

  // A parent that crashes or calls process.exit must not leave children holding ports. (A SIGKILLed
  // parent cannot run this; `npm run stack -- --down` kills the whole process group instead.)
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  // A child that ended (killed, or exited on its own) needs it no more; a cluster restarts hosts many times.
  void exited.then(() => process.removeListener('exit', killOnExit));

  return {
    name: options.name,
    pid: child.pid ?? -1,
    child,
    logFile: options.logFile,
    output: () => tail,
    exitDescription: () => exitDescription,
    exited,
    async stop({ graceMs = 10_000, signal = 'SIGTERM' } = {}) {
      process.removeListener('exit', killOnExit);
      if (exitDescription === null) {
        child.kill(signal);
        const escalate = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(escalate);
      }
      await exited;
    },
  };
}
