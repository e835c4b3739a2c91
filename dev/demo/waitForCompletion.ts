// Waits for a run's orders to be done (every workflow closed, once every start was made) or for its time to
// be up, drawing the progress line and firing the one-off restarts as the share of settled rows grows.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Database } from '../../src/db/pool';
import type { ClientFleet } from './clientFleet';
import type { Operators } from './operators';
import type { ProgressLine } from './progress';
import { countRunningWorkflows } from './report/readFacts';
import type { Chaos } from './runChaos';
import type { RunOptions } from './runOptions';
import type { WorkerFleet } from './workerFleet';

const POLL_MS = 1_000;

export async function waitForCompletion(input: {
  db: Database;
  client: Client;
  taskQueue: string;
  orderIds: string[];
  clients: ClientFleet;
  workers: WorkerFleet;
  chaos: Chaos;
  operators: Operators | null;
  progress: ProgressLine;
  options: RunOptions;
  startedAt: number;
}): Promise<void> {
  const { db, client, taskQueue, orderIds, clients, workers, chaos, operators, progress, options } = input;
  const deadline = input.startedAt + options.timeoutMs;
  let rowCounts: Record<string, number> = {};
  let closed = 0;
  let trouble: string;
  for (;;) {
    // A failed client (it gave up on Temporal) ends the wait; the report then shows what never started.
    const clientFailure = await Promise.race([
      clients.done.then(
        () => null,
        (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
      ),
      sleep(0).then(() => null),
    ]);
    if (clientFailure !== null) throw clientFailure;
    trouble = chaos.status();
    try {
      const { rows } = await db.query<{ state: string; count: number }>(
        `SELECT state, count(*)::int AS count FROM order_mail_log WHERE order_id = ANY($1::bigint[]) GROUP BY state`,
        [orderIds],
      );
      rowCounts = Object.fromEntries(rows.map((row) => [row.state, row.count]));
    } catch {
      trouble ||= 'Postgres unreachable';
    }
    if (clients.finished()) {
      try {
        const { running, all } = await countRunningWorkflows(client, taskQueue);
        closed = all - running;
        if (running === 0 && all >= orderIds.length) {
          chaos.onProgress(1);
          progress.update({ done: orderIds.length, total: orderIds.length, detail: 'all workflows closed' });
          return;
        }
      } catch {
        trouble ||= 'Temporal unreachable';
      }
    }
    const settled = (rowCounts.sent ?? 0) + (rowCounts.failed ?? 0);
    chaos.onProgress(settled / orderIds.length);
    progress.update({
      done: settled,
      total: orderIds.length,
      detail:
        `sent ${rowCounts.sent ?? 0} failed ${rowCounts.failed ?? 0} sending ${rowCounts.sending ?? 0}` +
        (clients.finished() ? ` | closed ${closed}` : ' | starting') +
        ` | workers ${workers.aliveCount()}/${options.workers} kills ${workers.counts().kills}` +
        (operators === null ? '' : ` | ${operators.status()}`) +
        (trouble ? ` | ${trouble}` : ''),
    });
    if (Date.now() > deadline) {
      progress.note(`timed out after ${Math.round(options.timeoutMs / 1000)} s; reporting what is there`);
      return;
    }
    await sleep(POLL_MS);
  }
}
