// One client process of the runner: the order service as it would behave with a redelivering event bus. It
// starts the confirmation mail of every order in its list, in an order of its own, through the library the
// order service imports (src/client.ts). Several of these run at once, so every order is started more than once.
//
// Input (env): DEMO_CLIENT_ORDERS_FILE (one order id a line), DEMO_CLIENT_SEED, DEMO_CLIENT_CONCURRENCY,
// DEMO_CLIENT_RATE (starts per second, 0 = as fast as Temporal answers), DEMO_CLIENT_RATE_STEPS and
// DEMO_CLIENT_EPOCH_MS (a rate per phase from that moment on, JSON [{fromMs, rate}]: the upgrade run's shaped
// load), TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE. Output: one JSON line of counts on stdout.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '../../packages/sandbox/src/faults';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import type { StartStep } from './runOptions';
import { startRateAt } from './upgradeLoad';

export interface ClientCounts {
  startCalls: number;
  started: number;
  alreadyStarted: number;
  /** Calls that failed (Temporal restarting, say) and were made again. */
  retriedCalls: number;
}

// Temporal may be restarting (the chaos profile does that): keep trying, as an outbox relay would.
const RETRY_DELAY_MS = 500;
const GIVE_UP_AFTER_MS = 120_000;

async function main(): Promise<void> {
  const ids = (await readFile(requiredEnv('DEMO_CLIENT_ORDERS_FILE'), 'utf8')).split('\n').filter(Boolean);
  const random = seededRandom(Number(process.env.DEMO_CLIENT_SEED ?? '1'));
  shuffle(ids, random);
  const concurrency = Number(process.env.DEMO_CLIENT_CONCURRENCY ?? '8');
  const steady = Number(process.env.DEMO_CLIENT_RATE ?? '0');
  const steps = JSON.parse(process.env.DEMO_CLIENT_RATE_STEPS ?? 'null') as StartStep[] | null;
  const epochMs = Number(process.env.DEMO_CLIENT_EPOCH_MS ?? Date.now());
  const rateAt = (at: number) => (steps === null ? steady : startRateAt(steps, at - epochMs));
  // Orders arrive as a stream, not all at once: a shop confirms them over time.
  let nextStartAt = Date.now();
  const pace = async (): Promise<void> => {
    const rate = rateAt(Math.max(nextStartAt, Date.now()));
    if (rate <= 0) return;
    const at = nextStartAt;
    nextStartAt = Math.max(nextStartAt, Date.now()) + 1000 / rate;
    if (at > Date.now()) await sleep(at - Date.now());
  };
  const client = await connectOrderMailClient();
  const counts: ClientCounts = { startCalls: 0, started: 0, alreadyStarted: 0, retriedCalls: 0 };
  try {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < ids.length) {
        const orderId = ids[next++]!;
        await pace();
        await startWithRetries(orderId);
      }
    };
    const startWithRetries = async (orderId: string): Promise<void> => {
      const deadline = Date.now() + GIVE_UP_AFTER_MS;
      for (;;) {
        counts.startCalls += 1;
        try {
          const result = await startOrderConfirmationMail(client, orderId);
          if (result.status === 'started') counts.started += 1;
          else counts.alreadyStarted += 1;
          return;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          counts.retriedCalls += 1;
          await sleep(RETRY_DELAY_MS);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  } finally {
    await client.connection.close();
  }
  process.stdout.write(`${JSON.stringify(counts)}\n`);
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let index = items.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
