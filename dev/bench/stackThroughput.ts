// Throughput of the real workflow on the native production stack (Temporal server on Postgres, N worker
// processes, the sandbox answering at once): how many orders per second go from start to a `sent` row.
//
//   node --import tsx dev/bench/stackThroughput.ts [--workers 3] [--orders 300] [--concurrency 50]
//
// Everything runs on this machine, so the figure says what one machine does, not what a cluster does.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import { insertOrder } from '../devtools/shopOrders';
import { createDatabase } from '../../src/db/pool';
import { startStack } from '../stack/stack';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      workers: { type: 'string', default: '3' },
      orders: { type: 'string', default: '300' },
      concurrency: { type: 'string', default: '50' },
    },
  });
  const workers = Number(values.workers);
  const orders = Number(values.orders);
  const concurrency = Number(values.concurrency);
  const directory = await mkdtemp(path.join(tmpdir(), 'stack-bench-'));
  const stack = await startStack({ directory, workers, uiPort: null, log: () => undefined });
  const db = createDatabase({ connectionString: stack.databaseUrl, applicationName: 'bench' });
  const client = await connectOrderMailClient({
    env: { TEMPORAL_ADDRESS: stack.temporalAddress, TEMPORAL_NAMESPACE: stack.namespace },
  });
  try {
    const orderIds: string[] = [];
    for (let index = 0; index < orders; index++) {
      orderIds.push(
        await insertOrder(db, {
          customerName: '山田 太郎',
          customerEmail: `bench${index}@example.com`,
          items: [{ productName: '有機緑茶 100g', quantity: 1, unitPriceYen: 1200 }],
        }),
      );
    }
    // A warm-up order, so the first workflow task's cache misses are not in the figure.
    const warmUp = orderIds.shift() ?? '';
    await startOrderConfirmationMail(client, warmUp);
    await client.workflow.getHandle(warmUp).result();

    // Closed loop: `concurrency` orders in flight at a time, each started, then awaited to completion.
    const latencies: number[] = [];
    let next = 0;
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < orderIds.length) {
          const orderId = orderIds[next++] ?? '';
          const began = performance.now();
          await startOrderConfirmationMail(client, orderId);
          await client.workflow.getHandle(orderId).result();
          latencies.push(performance.now() - began);
        }
      }),
    );
    const seconds = (performance.now() - startedAt) / 1000;
    const { rows } = await db.query<{ sent: number }>(
      `SELECT count(*)::int AS sent FROM order_mail_log WHERE state = 'sent'`,
    );
    latencies.sort((a, b) => a - b);
    const percentile = (p: number) => Math.round(latencies[Math.floor((latencies.length - 1) * p)] ?? 0);
    console.log(
      JSON.stringify({
        workers,
        orders: orderIds.length,
        concurrency,
        seconds: Number(seconds.toFixed(1)),
        ordersPerSecond: Number((orderIds.length / seconds).toFixed(1)),
        p50Ms: percentile(0.5),
        p99Ms: percentile(0.99),
        sentRows: rows[0]?.sent,
        messages: stack.sandbox.messages().length,
      }),
    );
  } finally {
    await client.connection.close();
    await db.close();
    await stack.stop();
    await rm(directory, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
