// Spawns the client processes (dev/demo/startOrdersProcess.ts) and sums what they report.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ClientCounts } from './startOrdersProcess';

const PROJECT_ROOT = path.join(__dirname, '..', '..');

export interface ClientFleet {
  /** Resolves with the summed counts once every client is done; rejects if one fails. */
  done: Promise<ClientCounts & { clientProcesses: number }>;
  finished(): boolean;
  stop(): Promise<void>;
}

export async function startClientFleet(options: {
  size: number;
  orderIds: string[];
  env: Record<string, string>;
  logDirectory: string;
  seed: number;
  /** Starts per second of each client; 0 = unpaced. */
  rate: number;
  /** A rate that changes by phase (the upgrade run's shaped load), counted from `epochMs`; overrides `rate`. */
  steps?: { fromMs: number; rate: number }[];
  epochMs?: number;
}): Promise<ClientFleet> {
  const ordersFile = path.join(options.logDirectory, 'order-ids.txt');
  await writeFile(ordersFile, `${options.orderIds.join('\n')}\n`);
  const children: ChildProcess[] = [];
  let finished = 0;
  const runs = Array.from({ length: options.size }, (_, index) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/demo/startOrdersProcess.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        ...options.env,
        DEMO_CLIENT_ORDERS_FILE: ordersFile,
        DEMO_CLIENT_SEED: String(options.seed * 1_000 + index),
        DEMO_CLIENT_RATE: String(options.rate),
        ...(options.steps === undefined
          ? {}
          : {
              DEMO_CLIENT_RATE_STEPS: JSON.stringify(options.steps),
              DEMO_CLIENT_EPOCH_MS: String(options.epochMs ?? Date.now()),
            }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group: see workerFleet.ts.
      detached: true,
    });
    children.push(child);
    const log = createWriteStream(path.join(options.logDirectory, `client-${index}.log`));
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr?.pipe(log);
    return new Promise<ClientCounts>((resolve, reject) => {
      // 'close', not 'exit': 'exit' may come before the last of stdout was read, and the counts are its last line.
      child.once('close', (code, signal) => {
        finished += 1;
        const line = stdout.trim().split('\n').pop() ?? '';
        if (code === 0 && line.startsWith('{')) resolve(JSON.parse(line) as ClientCounts);
        else reject(new Error(`client ${index} exited with ${signal ?? code}; see ${log.path as string}`));
      });
    });
  });
  const done = Promise.all(runs).then((all) => ({
    clientProcesses: all.length,
    startCalls: sum(all, 'startCalls'),
    started: sum(all, 'started'),
    alreadyStarted: sum(all, 'alreadyStarted'),
    retriedCalls: sum(all, 'retriedCalls'),
  }));
  done.catch(() => undefined);
  return {
    done,
    finished: () => finished === options.size,
    async stop() {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined)
                return resolve();
              child.once('exit', () => resolve());
              try {
                process.kill(-child.pid, 'SIGKILL');
              } catch {
                resolve();
              }
            }),
        ),
      );
    },
  };
}

function sum(all: ClientCounts[], key: keyof ClientCounts): number {
  return all.reduce((total, counts) => total + counts[key], 0);
}
