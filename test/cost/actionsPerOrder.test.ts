// What one order costs on Temporal Cloud, guarded: one real order down each path (the dev server, Postgres, the
// sandbox, the worker code in-process), started as the order service starts it, its history counted by the
// rules of the pricing page (dev/bench/cost/historyCost.ts). A change that adds an Action to a path fails
// here; a change that removes one fails too, until its pin is lowered: both are decisions to make on purpose.
// `npm run bench` prints the same table, beside the floor's, against each server it runs.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOrderPaths, type OrderPath, type PathRun } from '../../dev/bench/cost/orderPaths';
import { createOrder, openWorkflowTestBed, type WorkflowTestBed } from '../support/testKit';

// Billable Actions per order, by path (docs/benchmarks.md, "What one order costs").
const PINNED_ACTIONS: Record<OrderPath, number> = {
  accepted: 5,
  rejected: 5,
  'not-sent-then-accepted': 11,
  unknown: 5,
};

let bed: WorkflowTestBed | undefined;
let client: Client;
let runs: Map<OrderPath, PathRun>;

beforeAll(async () => {
  bed = await openWorkflowTestBed('actions');
  client = bed.client;
  const { database, sandbox, workers } = bed;
  const done = await runOrderPaths({
    client,
    taskQueue: workers['assume-sent'].taskQueue,
    db: database.db,
    createOrder: () => createOrder(database.db),
    queueFault: async (orderId, fault) => sandbox.queueFault(orderId, fault),
    // The test bed's workers leave unknown outcomes to the policy: this pins the policy's path.
    verifies: false,
  });
  runs = new Map(done.map((run) => [run.path, run]));
});

afterAll(async () => {
  await bed?.close();
});

describe('Temporal Cloud Actions per order', () => {
  for (const path of Object.keys(PINNED_ACTIONS) as OrderPath[]) {
    it(`${path}: ${PINNED_ACTIONS[path]} Actions`, () => {
      const run = runs.get(path)!;
      // The run went down the path it was meant to (row, workflow status), or its count says nothing.
      expect(run.problems).toEqual([]);
      expect(run.cost.actions, `order ${run.orderId}: ${JSON.stringify(run.cost)}`).toBe(
        PINNED_ACTIONS[path],
      );
    });
  }
});
