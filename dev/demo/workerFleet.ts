// N worker processes, each `node --import tsx src/worker.ts` exactly as deployed, in a process group of its
// own: a kill reaches the whole process (tsx's esbuild helper included), and Ctrl-C in the terminal does not
// reach them behind the runner's back; the runner stops them itself. With DEMO_WORKER_JS (a compiled worker,
// dist/worker.js of `npm run build`) each runs that with plain node instead, as `npm start` does.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const STARTED_MARKER = '"message":"Worker started"';
const SUPERVISOR_RESTART_DELAY_MS = 1_000;

interface FleetWorker {
  slot: number;
  child: ChildProcess;
  started: Promise<void>;
  exited: Promise<void>;
  alive: boolean;
  /** It said it polls ("Worker started"). */
  polling: boolean;
}

export interface WorkerFleet {
  /** Resolves when every worker said it polls; rejects if one exits first. */
  whenAllStarted(): Promise<void>;
  aliveCount(): number;
  /** Live workers that said they poll. */
  pollingCount(): number;
  /** SIGKILLs one random live worker and starts another in its slot after `restartDelayMs`. */
  killOneAndReplace(restartDelayMs: number): Promise<void>;
  /** Kills by the runner, restarts after them, and workers that exited on their own (restarted as well). */
  counts(): { kills: number; restarts: number; exitedOnTheirOwn: number };
  /**
   * A rolling restart, as a deployment rolls a change of settings: one worker at a time is stopped with SIGTERM
   * (it finishes what it runs, within its shutdown grace) and started again with `change` over its settings;
   * the next one only once that one polls. Rejects if a worker refuses to start (its log says why).
   */
  roll(change: Record<string, string>): Promise<void>;
  /** Workers started again by rolling restarts. */
  rolled(): number;
  /** Kills every worker (and its process group) and waits for them. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** node's arguments that run one worker. */
function workerArguments(): string[] {
  const compiled = process.env.DEMO_WORKER_JS ?? '';
  if (compiled !== '') return [path.resolve(compiled)];
  // node --import tsx, not the tsx CLI: the CLI runs the script in a child of its own.
  return ['--import', 'tsx', 'src/worker.ts'];
}

export function startWorkerFleet(options: {
  size: number;
  env: Record<string, string>;
  logDirectory: string;
  random: () => number;
}): WorkerFleet {
  const workers: FleetWorker[] = [];
  const logs: WriteStream[] = [];
  let kills = 0;
  let restarts = 0;
  let exitedOnTheirOwn = 0;
  let stopping = false;
  let env = options.env;
  let rolled = 0;
  const killedByUs = new WeakSet<FleetWorker>();

  const launch = (slot: number): FleetWorker => {
    const log = createWriteStream(path.join(options.logDirectory, `worker-${slot}.log`), { flags: 'a' });
    logs.push(log);
    const child = spawn(process.execPath, workerArguments(), {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const worker: FleetWorker = {
      slot,
      child,
      alive: true,
      polling: false,
      started: Promise.resolve(),
      exited: Promise.resolve(),
    };
    let seen = '';
    worker.started = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        log.write(chunk);
        seen = (seen + chunk.toString('utf8')).slice(-4_000);
        if (!worker.polling && seen.includes(STARTED_MARKER)) {
          worker.polling = true;
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code, signal) =>
        reject(
          new Error(`worker ${slot} exited (${signal ?? code}) before it started; see its log:\n${seen}`),
        ),
      );
    });
    // A worker that dies before starting is reported by whenAllStarted, not as an unhandled rejection.
    worker.started.catch(() => undefined);
    worker.exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        worker.alive = false;
        resolve();
        // A worker that starts while Temporal or Postgres is down exits at once (it does not retry its first
        // connection). A deployment's supervisor starts it again; here the fleet is that supervisor.
        if (!killedByUs.has(worker) && !stopping) {
          exitedOnTheirOwn += 1;
          setTimeout(() => {
            if (stopping || workers[worker.slot] !== worker) return;
            workers[worker.slot] = launch(worker.slot);
          }, SUPERVISOR_RESTART_DELAY_MS);
        }
      }),
    );
    return worker;
  };

  for (let slot = 0; slot < options.size; slot++) workers.push(launch(slot));

  const killGroup = (worker: FleetWorker, signal: NodeJS.Signals): void => {
    killedByUs.add(worker);
    if (!worker.alive || worker.child.pid === undefined) return;
    try {
      process.kill(-worker.child.pid, signal);
    } catch {
      // Already gone.
    }
  };

  return {
    async whenAllStarted() {
      await Promise.all(workers.map((worker) => worker.started));
    },
    aliveCount() {
      return workers.filter((worker) => worker.alive).length;
    },
    pollingCount() {
      return workers.filter((worker) => worker.alive && worker.polling).length;
    },
    async killOneAndReplace(restartDelayMs) {
      const alive = workers.filter((worker) => worker.alive);
      if (alive.length === 0 || stopping) return;
      const victim = alive[Math.floor(options.random() * alive.length)]!;
      killGroup(victim, 'SIGKILL');
      kills += 1;
      await victim.exited;
      await new Promise((resolve) => setTimeout(resolve, restartDelayMs));
      if (stopping) return;
      workers[victim.slot] = launch(victim.slot);
      restarts += 1;
    },
    counts() {
      return { kills, restarts, exitedOnTheirOwn };
    },
    async roll(change) {
      env = { ...env, ...change };
      for (let slot = 0; slot < workers.length; slot++) {
        if (stopping) return;
        const old = workers[slot]!;
        killGroup(old, 'SIGTERM');
        await old.exited;
        if (stopping) return;
        const next = launch(slot);
        workers[slot] = next;
        await next.started;
        rolled += 1;
      }
    },
    rolled: () => rolled,
    async stop(signal = 'SIGKILL') {
      stopping = true;
      for (const worker of workers) killGroup(worker, signal);
      await Promise.all(workers.map((worker) => worker.exited));
      await Promise.all(logs.map((log) => new Promise((resolve) => log.end(resolve))));
    },
  };
}
