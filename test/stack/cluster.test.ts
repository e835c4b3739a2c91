// The stack with the Temporal server as a cluster (dev/stack/temporalCluster.ts): every service in a process
// of its own, two history hosts that each own some of the 16 shards, and a workflow that completes through the
// frontends' balancer as it does on the single server. Then a history host is SIGKILLed: the other takes all
// shards and an order still gets its one mail; started again, the host takes its share back.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { RunningTemporalCluster } from '../../dev/stack/temporalCluster';
import { createOrder, waitFor } from '../support/testKit';
import { startTestStack, type TestStack } from './stackKit';

let testStack: TestStack;
let sandbox: MailSandbox;
let cluster: RunningTemporalCluster;

beforeAll(async () => {
  testStack = await startTestStack({ workers: 1, cluster: true });
  if (testStack.stack.cluster === null) throw new Error('the stack was expected to run a cluster');
  sandbox = testStack.stack.sandbox;
  cluster = testStack.stack.cluster;
});
afterAll(async () => {
  await testStack?.close();
});

async function sendOneOrder(): Promise<string> {
  const orderId = await createOrder(testStack.db);
  const started = await startOrderConfirmationMail(testStack.client, orderId);
  expect(started.status).toBe('started');
  const result: unknown = await testStack.client.workflow.getHandle(orderId).result();
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  expect(await readMailLog(testStack.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  return orderId;
}

describe('the Temporal server as a cluster of processes', () => {
  it('runs each service in a process of its own, and both history hosts own shards', async () => {
    const services = cluster.hosts.map((host) => host.service).sort();
    expect(services).toEqual([
      'frontend',
      'frontend',
      'history',
      'history',
      'matching',
      'matching',
      'worker',
    ]);
    // Seven processes, each started for its one service.
    const pids = new Set(cluster.hosts.map((host) => host.process().pid));
    expect(pids.size).toBe(7);
    for (const host of cluster.hosts) {
      const args = readFileSync(`/proc/${host.process().pid}/cmdline`, 'utf8').split('\0');
      expect(args.slice(args.indexOf('--service'), args.indexOf('--service') + 2)).toEqual([
        '--service',
        host.service,
      ]);
    }
    // The server's own membership table: every host heartbeats under its role.
    const membership = await cluster.membership();
    expect(membership.frontend).toHaveLength(2);
    expect(membership.history).toHaveLength(2);
    expect(membership.matching).toHaveLength(2);
    expect(membership.worker).toHaveLength(1);
    // The cluster's own databases, with 16 shards: the single server's 4 would leave a host little to own.
    const info = await testStack.client.workflowService.getClusterInfo({});
    expect(info.historyShardCount).toBe(16);
    const shards = await waitFor(
      'both history hosts to own shards',
      async () => {
        const owned = await cluster.shardOwnership();
        const counts = Object.values(owned);
        return counts.length === 2 && counts.every((count) => count > 0) && sum(counts) === 16
          ? owned
          : undefined;
      },
      60_000,
    );
    expect(Object.keys(shards).sort()).toEqual(['history-1', 'history-2']);
  });

  it('completes a workflow through the frontends, and the Web UI reads it through the cluster', async () => {
    const orderId = await sendOneOrder();
    const { uiUrl } = testStack.stack;
    if (uiUrl === null) throw new Error('the stack was expected to run its Web UI');
    const response = await fetch(
      `${uiUrl}/api/v1/namespaces/${testStack.stack.namespace}/workflows/${encodeURIComponent(orderId)}`,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { workflowExecutionInfo?: { status?: string } };
    expect(body.workflowExecutionInfo?.status).toBe('WORKFLOW_EXECUTION_STATUS_COMPLETED');
  });

  it('a SIGKILLed history host: the other takes every shard, an order gets its one mail, and the host takes its share back', async () => {
    await cluster.kill('history-1');
    await waitFor(
      'history-2 to own all 16 shards',
      async () => ((await cluster.shardOwnership())['history-2'] === 16 ? true : undefined),
      120_000,
    );
    await sendOneOrder();
    await cluster.start('history-1');
    const shards = await waitFor(
      'both history hosts to own shards again',
      async () => {
        const owned = await cluster.shardOwnership();
        return (owned['history-1'] ?? 0) > 0 && (owned['history-2'] ?? 0) > 0 ? owned : undefined;
      },
      120_000,
    );
    expect(sum(Object.values(shards))).toBeGreaterThanOrEqual(16);
    await sendOneOrder();
  });
});

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
