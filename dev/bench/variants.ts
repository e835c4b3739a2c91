// The things the benchmark compares, each behind one interface: start orders (closed or open loop), say
// when each order's record step happened, and check that the work was really done.
import type { Client } from '@temporalio/client';
import { startOrderConfirmationMail } from '../../src/client';
import type { Database } from '../../src/db/pool';
import type { CommitCounter } from './commitCounter';
import type { BenchServer } from './environment';
import type { SandboxControlClient } from '../../packages/sandbox/src/sandboxControlClient';
import {
  countRunning,
  fetchResults,
  temporalClosedLoop,
  temporalOpenLoop,
  waitUntil,
  type TemporalTarget,
} from './load/temporalLoad';
import type { VariantName } from './options';
import { historyToJson } from '../devtools/historyJson';
import { countSent, recordedTimes } from './orders';
import type { PlainCommand, PlainReply } from './plain/process';
import { SWITCHES, type SwitchVariant } from './switches/skips';
import type { PlainProcessPool, TemporalWorkerPool } from './workerPools';

export interface ClosedLoopOutcome {
  starts: [string, number][];
  stoppedAtMs: number;
  recordedAtMs: Map<string, number>;
}

export interface OpenLoopOutcome {
  recordedAtMs: Map<string, number>;
  /** Temporal variants: each start's lag from its due time to the server's answer; null for the plain loop. */
  startLagsMs: number[] | null;
}

export interface Variant {
  name: VariantName;
  /** The Temporal server it runs against; null for the plain loop. */
  server: BenchServer | null;
  description: string;
  /** Whether its orders must exist in Postgres (the floor's no-op activities never look). */
  needsDatabaseOrders: boolean;
  /** A database of its own instead of the bench's (release-2.0): its orders go there, its commits are counted there. */
  ownDatabase?: OwnDatabase;
  workerPids(): number[];
  scaleTo(workers: number): Promise<void>;
  closedLoop(orderIds: string[], concurrency: number, durationMs: number): Promise<ClosedLoopOutcome>;
  /** Offers the orders at `rate` from t0 on and returns when each one's record step happened. */
  openLoop(
    orderIds: string[],
    t0Ms: number,
    ratePerSecond: number,
    drainTimeoutMs: number,
  ): Promise<OpenLoopOutcome>;
  /** Temporal variants: the recorded history of one order's run, as JSON (for where its latency went). */
  history?(orderId: string): Promise<unknown>;
  /** Problems found: a missing or duplicated mail, a row not sent, a workflow that did not finish. */
  verify(orderIds: string[], recordedAtMs: Map<string, number>): Promise<string[]>;
}

export interface OwnDatabase {
  db: Database;
  commits: CommitCounter;
}

export function floorVariant(
  name: 'floor' | 'floor-local' | 'empty',
  server: BenchServer,
  client: Client,
  pool: TemporalWorkerPool,
  taskQueue: string,
  workflowIdPrefix: string,
): Variant {
  const workflowType = { floor: 'benchFloorRegular', 'floor-local': 'benchFloorLocal', empty: 'benchEmpty' }[
    name
  ];
  const target: TemporalTarget = {
    async start(orderId) {
      await client.workflow.start(workflowType, {
        workflowId: `${workflowIdPrefix}${orderId}`,
        taskQueue,
        args: [orderId],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
      });
    },
    result: (orderId) => client.workflow.getHandle(`${workflowIdPrefix}${orderId}`).result(),
  };
  const times = (results: Map<string, unknown>): Map<string, number> =>
    new Map([...results].filter(([, value]) => typeof value === 'number') as [string, number][]);
  return {
    name,
    server,
    description: {
      floor: 'floor: claim, send, record as regular no-op activities',
      'floor-local': 'floor: claim and record as local no-op activities, send regular',
      empty: 'empty workflow (no activity)',
    }[name],
    needsDatabaseOrders: false,
    workerPids: () => pool.pids(),
    scaleTo: (workers) => pool.scaleTo(workers),
    async closedLoop(orderIds, concurrency, durationMs) {
      const run = await temporalClosedLoop(target, orderIds, concurrency, durationMs);
      return { starts: run.starts, stoppedAtMs: run.stoppedAtMs, recordedAtMs: times(run.results) };
    },
    async openLoop(orderIds, t0Ms, ratePerSecond, drainTimeoutMs) {
      const { startLagsMs } = await temporalOpenLoop(target, orderIds, t0Ms, ratePerSecond);
      // Visibility is a cheap way to wait; the results (fetched after) are the truth.
      const closed = await waitUntil(
        async () => (await countRunning(client, taskQueue)) === 0,
        drainTimeoutMs,
        500,
      );
      // No-op workflows that do not close within minutes mean the harness or the server is broken.
      if (!closed)
        throw new Error(`${name}: workflows still running ${drainTimeoutMs} ms after the last start`);
      return { recordedAtMs: times(await fetchResults(target, orderIds)), startLagsMs };
    },
    history: async (orderId) =>
      historyToJson(await client.workflow.getHandle(`${workflowIdPrefix}${orderId}`).fetchHistory()),
    async verify(orderIds, recordedAtMs) {
      const missing = orderIds.filter((orderId) => !recordedAtMs.has(orderId)).length;
      return missing === 0
        ? []
        : [`${name}: ${missing} of ${orderIds.length} workflows returned no record time`];
    },
  };
}

export function productVariant(
  server: BenchServer,
  client: Client,
  pool: TemporalWorkerPool,
  taskQueue: string,
  db: Database,
  sandbox: SandboxControlClient,
  /** 'product', the product behind one bench-only switch (dev/bench/switches), or 2.0.0's worker (release-2.0). */
  name: VariantName = 'product',
  /** release-2.0: its database (`db` above), where its orders are inserted and its commits counted. */
  ownDatabase?: OwnDatabase,
): Variant {
  const target: TemporalTarget = {
    async start(orderId) {
      const started = await startOrderConfirmationMail(client, orderId, { taskQueue });
      if (started.status !== 'started') throw new Error(`order ${orderId} was already started`);
    },
    result: (orderId) => client.workflow.getHandle(orderId).result(),
  };
  return {
    name,
    server,
    description:
      name === 'product'
        ? 'product: orderConfirmationMail, src/worker.ts processes, Postgres, POST to the sandbox'
        : name === 'release-2.0'
          ? "release-2.0: 2.0.0's own src/worker.ts (its checkout), on a database its migrator made"
          : `${name}: the product with ${SWITCHES[name as SwitchVariant]} (a bench-only switch)`,
    needsDatabaseOrders: true,
    ...(ownDatabase === undefined ? {} : { ownDatabase }),
    workerPids: () => pool.pids(),
    scaleTo: (workers) => pool.scaleTo(workers),
    async closedLoop(orderIds, concurrency, durationMs) {
      const run = await temporalClosedLoop(target, orderIds, concurrency, durationMs);
      const started = run.starts.map(([orderId]) => orderId);
      return {
        starts: run.starts,
        stoppedAtMs: run.stoppedAtMs,
        recordedAtMs: await recordedMs(db, started),
      };
    },
    async openLoop(orderIds, t0Ms, ratePerSecond, drainTimeoutMs) {
      const { startLagsMs } = await temporalOpenLoop(target, orderIds, t0Ms, ratePerSecond);
      // Done means sent: a row recorded as failed (not sent) is claimed again by its workflow after a
      // backoff. Whatever is not sent by the deadline is reported by verify().
      await waitUntil(async () => (await countSent(db, orderIds)) === orderIds.length, drainTimeoutMs);
      return { recordedAtMs: await recordedMs(db, orderIds), startLagsMs };
    },
    history: async (orderId) => historyToJson(await client.workflow.getHandle(orderId).fetchHistory()),
    verify: (orderIds) => verifyMails(name, db, sandbox, orderIds),
  };
}

/** The design card built plainly (dev/bench/card): its own workflow and worker, the product's modules. */
export function cardVariant(
  server: BenchServer,
  client: Client,
  pool: Pick<TemporalWorkerPool, 'pids' | 'scaleTo'>,
  taskQueue: string,
  workflowIdPrefix: string,
  db: Database,
  sandbox: SandboxControlClient,
): Variant {
  const target: TemporalTarget = {
    async start(orderId) {
      // The product's start options, without the search attributes it sets at start.
      await client.workflow.start('benchCardMail', {
        workflowId: `${workflowIdPrefix}${orderId}`,
        taskQueue,
        args: [orderId],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
      });
    },
    result: (orderId) => client.workflow.getHandle(`${workflowIdPrefix}${orderId}`).result(),
  };
  return {
    name: 'card',
    server,
    description: 'card: the design card built plainly (claim, one POST, record; no fence, audit, attributes)',
    needsDatabaseOrders: true,
    workerPids: () => pool.pids(),
    scaleTo: (workers) => pool.scaleTo(workers),
    async closedLoop(orderIds, concurrency, durationMs) {
      const run = await temporalClosedLoop(target, orderIds, concurrency, durationMs);
      const started = run.starts.map(([orderId]) => orderId);
      return {
        starts: run.starts,
        stoppedAtMs: run.stoppedAtMs,
        recordedAtMs: await recordedMs(db, started),
      };
    },
    async openLoop(orderIds, t0Ms, ratePerSecond, drainTimeoutMs) {
      const { startLagsMs } = await temporalOpenLoop(target, orderIds, t0Ms, ratePerSecond);
      // The card never retries: an order not sent by the deadline stays so, and verify() reports it.
      await waitUntil(async () => (await countSent(db, orderIds)) === orderIds.length, drainTimeoutMs);
      return { recordedAtMs: await recordedMs(db, orderIds), startLagsMs };
    },
    history: async (orderId) =>
      historyToJson(await client.workflow.getHandle(`${workflowIdPrefix}${orderId}`).fetchHistory()),
    verify: (orderIds) => verifyMails('card', db, sandbox, orderIds),
  };
}

export function plainVariant(
  pool: PlainProcessPool,
  db: Database,
  sandbox: SandboxControlClient,
  /** Consumers in the open loop, as many as the closed loop has loops. */
  openLoopConcurrency: number,
): Variant {
  return {
    name: 'plain',
    server: null,
    description: 'plain loop: claim → POST → record, no Temporal, same SQL and mail client',
    needsDatabaseOrders: true,
    workerPids: () => pool.pids(),
    scaleTo: (workers) => pool.scaleTo(workers),
    async closedLoop(orderIds, concurrency, durationMs) {
      const processes = pool.size();
      const commands: PlainCommand[] = Array.from({ length: processes }, (_, index) => ({
        kind: 'closed',
        orderIds: orderIds.filter((_, position) => position % processes === index),
        concurrency: Math.ceil(concurrency / processes),
        durationMs,
      }));
      const replies = await pool.run(commands, durationMs + 120_000);
      const done = replies.filter(
        (reply): reply is Extract<PlainReply, { kind: 'closed-done' }> => reply.kind === 'closed-done',
      );
      const starts = done.flatMap((reply) => reply.starts);
      const stoppedAtMs = Math.max(...done.map((reply) => reply.stoppedAtMs));
      return {
        starts,
        stoppedAtMs,
        recordedAtMs: await recordedMs(
          db,
          starts.map(([orderId]) => orderId),
        ),
      };
    },
    async openLoop(orderIds, t0Ms, ratePerSecond, drainTimeoutMs) {
      const processes = pool.size();
      // Round-robin: process k takes orders k, k+P, k+2P…, due at the same times as in one global schedule.
      const commands: PlainCommand[] = Array.from({ length: processes }, (_, index) => ({
        kind: 'open',
        orderIds: orderIds.filter((_, position) => position % processes === index),
        t0Ms: t0Ms + (index * 1000) / ratePerSecond,
        ratePerSecond: ratePerSecond / processes,
        concurrency: Math.ceil(openLoopConcurrency / processes),
      }));
      await pool.run(commands, (orderIds.length / ratePerSecond) * 1000 + drainTimeoutMs);
      return { recordedAtMs: await recordedMs(db, orderIds), startLagsMs: null };
    },
    verify: (orderIds) => verifyMails('plain', db, sandbox, orderIds),
  };
}

async function recordedMs(db: Database, orderIds: string[]): Promise<Map<string, number>> {
  const rows = await recordedTimes(db, orderIds);
  return new Map([...rows].map(([orderId, row]) => [orderId, row.recordedAtMs]));
}

/** Every order: a sent/accepted row, and exactly one message at the sandbox. Then the sandbox forgets. */
async function verifyMails(
  variant: string,
  db: Database,
  sandbox: SandboxControlClient,
  orderIds: string[],
): Promise<string[]> {
  const problems: string[] = [];
  const rows = await recordedTimes(db, orderIds);
  const notSent = orderIds.filter((orderId) => {
    const row = rows.get(orderId);
    return row === undefined || row.state !== 'sent' || row.outcome !== 'accepted';
  });
  if (notSent.length > 0) {
    problems.push(
      `${variant}: ${notSent.length} of ${orderIds.length} orders have no sent/accepted row (e.g. ${notSent.slice(0, 3).join(', ')})`,
    );
  }
  const perOrder = new Map<string, number>();
  for (const message of await sandbox.messages()) {
    perOrder.set(message.orderId, (perOrder.get(message.orderId) ?? 0) + 1);
  }
  const wrong = orderIds.filter((orderId) => perOrder.get(orderId) !== 1);
  if (wrong.length > 0) {
    const example = wrong[0]!;
    problems.push(
      `${variant}: ${wrong.length} of ${orderIds.length} orders did not get exactly one mail (e.g. ${example}: ${perOrder.get(example) ?? 0})`,
    );
  }
  await sandbox.reset();
  return problems;
}
