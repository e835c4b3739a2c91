// The measured processes: Temporal worker processes (the product's src/worker.ts, or the floor's worker),
// and plain-loop processes. Pools grow from 1 to 2 to 4 between phases; none is restarted mid-run.
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { killOnExit, spawnTsProcess, PROJECT_ROOT, type LoggedProcess } from './childProcess';
import type { PlainCommand, PlainReply } from './plain/process';

// Bundling the workflows with webpack at start-up takes a while on a busy 2-core machine.
const WORKER_STARTUP_TIMEOUT_MS = 180_000;

export class TemporalWorkerPool {
  private readonly processes: LoggedProcess[] = [];

  constructor(
    private readonly name: string,
    private readonly script: string,
    private readonly env: Record<string, string>,
    private readonly logDirectory: string,
    private readonly where: { preload?: string; cwd?: string } = {},
  ) {}

  pids(): number[] {
    return this.processes.map((process) => process.pid);
  }

  private scaling: Promise<void> = Promise.resolve();

  /** Grows the pool to `count` processes. Serialised: the floor variants share one pool and ask together. */
  scaleTo(count: number): Promise<void> {
    const next = this.scaling.then(() => this.grow(count));
    this.scaling = next.catch(() => undefined);
    return next;
  }

  private async grow(count: number): Promise<void> {
    const starting: Promise<LoggedProcess>[] = [];
    for (let index = this.processes.length; index < count; index++) {
      starting.push(
        spawnTsProcess({
          name: `${this.name} worker ${index + 1}`,
          script: this.script,
          env: this.env,
          logPath: path.join(this.logDirectory, `${this.name}-worker-${index + 1}.log`),
          readyText: '"message":"Worker started"',
          startupTimeoutMs: WORKER_STARTUP_TIMEOUT_MS,
          ...this.where,
        }),
      );
    }
    const settled = await Promise.allSettled(starting);
    for (const result of settled) if (result.status === 'fulfilled') this.processes.push(result.value);
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.map((process) => process.stop()));
  }
}

interface PlainProcess {
  child: ChildProcess;
  pid: number;
  replies: PlainReply[];
  waiters: (() => void)[];
}

export class PlainProcessPool {
  private readonly processes: PlainProcess[] = [];

  constructor(
    private readonly env: Record<string, string>,
    private readonly logDirectory: string,
  ) {}

  size(): number {
    return this.processes.length;
  }

  pids(): number[] {
    return this.processes.map((process) => process.pid);
  }

  async scaleTo(count: number): Promise<void> {
    while (this.processes.length < count) {
      const index = this.processes.length + 1;
      const logFd = openSync(path.join(this.logDirectory, `plain-${index}.log`), 'a');
      const child = fork(path.join(PROJECT_ROOT, 'dev/bench/plain/process.ts'), [], {
        cwd: PROJECT_ROOT,
        execArgv: ['--import', 'tsx'],
        env: { ...process.env, ...this.env },
        stdio: ['ignore', logFd, logFd, 'ipc'],
      });
      closeSync(logFd);
      const entry: PlainProcess = { child, pid: child.pid ?? -1, replies: [], waiters: [] };
      child.on('message', (reply: PlainReply) => {
        entry.replies.push(reply);
        for (const wake of entry.waiters.splice(0)) wake();
      });
      child.once('exit', () => {
        for (const wake of entry.waiters.splice(0)) wake();
      });
      killOnExit.add(child);
      child.once('exit', () => killOnExit.delete(child));
      const ready = await this.nextReply(entry, 60_000);
      if (ready.kind !== 'ready')
        throw new Error(`plain-loop process ${index} failed to start: ${JSON.stringify(ready)}`);
      this.processes.push(entry);
    }
  }

  /** Sends one command to each of the first `count` processes and returns their replies. */
  async run(commands: PlainCommand[], timeoutMs: number): Promise<PlainReply[]> {
    const targets = this.processes.slice(0, commands.length);
    targets.forEach((target, index) => target.child.send(commands[index]!));
    const replies = await Promise.all(targets.map((target) => this.nextReply(target, timeoutMs)));
    const error = replies.find((reply) => reply.kind === 'error');
    if (error) throw new Error(`plain loop failed: ${error.kind === 'error' ? error.message : ''}`);
    return replies;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.processes.map(async (entry) => {
        if (entry.child.exitCode !== null) return;
        const exited = new Promise((resolve) => entry.child.once('exit', resolve));
        entry.child.send({ kind: 'exit' } satisfies PlainCommand);
        const kill = setTimeout(() => entry.child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(kill);
      }),
    );
  }

  private async nextReply(entry: PlainProcess, timeoutMs: number): Promise<PlainReply> {
    const deadline = Date.now() + timeoutMs;
    while (entry.replies.length === 0) {
      if (entry.child.exitCode !== null || entry.child.signalCode !== null) {
        throw new Error(`plain-loop process ${entry.pid} exited; see its log in the bench log directory`);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw new Error(`plain-loop process ${entry.pid} did not answer in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        entry.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return entry.replies.shift()!;
  }
}
