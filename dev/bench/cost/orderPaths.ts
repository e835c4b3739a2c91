// One order down each path the workflow knows, started as the order service starts it
// (startOrderConfirmationMail), its history fetched once it closed and counted (historyCost.ts). Used by the
// bench (against each Temporal server it runs) and by test/cost/actionsPerOrder.test.ts (which pins the
// accepted path's Actions). The mail sandbox decides the path: a fault queued for the order's first request.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { historyToJson } from '../../devtools/historyJson';
import { startOrderConfirmationMail } from '../../../src/client';
import { readMailLog } from '../../../src/db/orderMailLog';
import type { Database } from '../../../src/db/pool';
import type { Fault } from '../../../packages/sandbox/src/faults';
import { countHistoryCost, type HistoryCost } from './historyCost';

export const ORDER_PATHS = ['accepted', 'rejected', 'not-sent-then-accepted', 'unknown'] as const;
export type OrderPath = (typeof ORDER_PATHS)[number];

interface PathPlan {
  /** What the sandbox does with the order's first request; null: accept it. */
  fault: Fault | null;
  /** The log row the path ends with, under the default unknown-outcome policy (assume-sent). */
  expected: { state: string; outcome: string; attempts: number };
  /** Whether the workflow ends Completed (a rejection ends Failed, on purpose). */
  completes: boolean;
}

export const PATH_PLANS: Record<OrderPath, PathPlan> = {
  accepted: { fault: null, expected: { state: 'sent', outcome: 'accepted', attempts: 1 }, completes: true },
  rejected: {
    fault: { kind: 'status', status: 422 },
    expected: { state: 'failed', outcome: 'rejected', attempts: 1 },
    completes: false,
  },
  // 429 is "definitely not accepted": the row is failed/not_sent, the workflow waits (a durable timer) and
  // claims again. (A 5xx is unknown where the provider has a lookup: a load balancer's 503 can follow the
  // request's forwarding.)
  'not-sent-then-accepted': {
    fault: { kind: 'status', status: 429 },
    expected: { state: 'sent', outcome: 'accepted', attempts: 2 },
    completes: true,
  },
  // Accepted, then the connection dies before the answer: unknown, settled by the policy; where the workers
  // verify (the bench's run the defaults, and the generic API can be asked), the lookup finds the mail and
  // the row is sent/accepted (see expectedRow).
  unknown: {
    fault: { kind: 'accept-then-drop' },
    expected: { state: 'sent', outcome: 'unknown', attempts: 1 },
    completes: true,
  },
};

export interface PathRun {
  path: OrderPath;
  orderId: string;
  /** The run's history as the API's JSON (what `temporal workflow show --output json` prints). */
  history: unknown;
  cost: HistoryCost;
  row: { state: string; outcome: string | null; attempts: number } | null;
  /** What did not go as the path says (the figures of such a run do not describe the path). */
  problems: string[];
}

export interface OrderPathsTarget {
  client: Client;
  taskQueue: string;
  db: Database;
  createOrder(): Promise<string>;
  queueFault(orderId: string, fault: Fault): Promise<void>;
  /** Whether the workers ask the provider about an unknown outcome (MAIL_VERIFY), which changes that path. */
  verifies: boolean;
}

/** The row a path ends with on these workers: a verified unknown outcome is the accepted send it was. */
function expectedRow(path: OrderPath, verifies: boolean): PathPlan['expected'] {
  const { expected } = PATH_PLANS[path];
  return path === 'unknown' && verifies ? { ...expected, outcome: 'accepted' } : expected;
}

/** Runs one order per path, side by side, and returns each path's history and what it cost. */
export async function runOrderPaths(
  target: OrderPathsTarget,
  paths: readonly OrderPath[] = ORDER_PATHS,
): Promise<PathRun[]> {
  return Promise.all(paths.map((path) => runOnePath(target, path)));
}

async function runOnePath(target: OrderPathsTarget, path: OrderPath): Promise<PathRun> {
  const plan = PATH_PLANS[path];
  const orderId = await target.createOrder();
  if (plan.fault !== null) await target.queueFault(orderId, plan.fault);
  const started = await startOrderConfirmationMail(target.client, orderId, { taskQueue: target.taskQueue });
  if (started.status !== 'started') throw new Error(`order ${orderId} (${path}) was already started`);
  const handle = target.client.workflow.getHandle(orderId);
  const problems: string[] = [];
  try {
    await handle.result();
    if (!plan.completes) problems.push(`${path}: the workflow completed, expected it to fail`);
  } catch (error) {
    if (!(error instanceof WorkflowFailedError)) throw error;
    if (plan.completes)
      problems.push(`${path}: the workflow failed: ${error.cause?.message ?? error.message}`);
  }
  const history = historyToJson(await handle.fetchHistory());
  const log = await readMailLog(target.db, orderId);
  const row = log === null ? null : { state: log.state, outcome: log.outcome, attempts: log.attempts };
  const expected = expectedRow(path, target.verifies);
  if (
    row?.state !== expected.state ||
    row.outcome !== expected.outcome ||
    row.attempts !== expected.attempts
  ) {
    problems.push(
      `${path}: order ${orderId} ended ${row === null ? 'with no log row' : `${row.state}/${row.outcome} after ${row.attempts} attempt(s)`}, ` +
        `expected ${expected.state}/${expected.outcome} after ${expected.attempts}`,
    );
  }
  return { path, orderId, history, cost: countHistoryCost(history), row, problems };
}
