// `npm run setup`: registers the search attributes the workflows upsert and creates or updates the sweep's
// Schedule (RECONCILE_INTERVAL_MS); safe to run any number of times.
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { connectOrderMailClient } from '../client';
import { ConfigError } from '../config/envReader';
import { loadOpsConfig } from '../config/loadOpsConfig';
import { ORDER_MAIL_SEARCH_ATTRIBUTES } from '../shared/orderMailSearchAttributes';
import { DEFAULT_SWEEP_SCHEDULE_ID, ensureSweepSchedule } from '../temporal/sweepSchedule';
import { ensureSearchAttributes } from '../temporal/searchAttributeRegistration';

const DEFAULT_RECONCILE_INTERVAL_MS = 300_000;

export async function main(
  env: Record<string, string | undefined> = process.env,
  out: (line: string) => void = console.log,
): Promise<void> {
  const config = loadOpsConfig(env);
  const intervalMs = readInterval(env.RECONCILE_INTERVAL_MS);
  const client = await connectOrderMailClient({
    address: config.temporal.address,
    addressSetting: 'TEMPORAL_ADDRESS',
    namespace: config.temporal.namespace,
  });
  try {
    await ensureSearchAttributes(client.connection, config.temporal.namespace);
    out(
      `Search attributes registered on namespace "${config.temporal.namespace}": ` +
        ORDER_MAIL_SEARCH_ATTRIBUTES.map((key) => `${key.name} (${key.type})`).join(', '),
    );
    const schedule = await ensureSweepSchedule(client, {
      scheduleId: env.RECONCILE_SCHEDULE_ID?.trim() || DEFAULT_SWEEP_SCHEDULE_ID,
      taskQueue: config.temporal.taskQueue,
      intervalMs,
    });
    out(
      `Reconciliation schedule ${schedule}: every ${intervalMs / 1000} s on task queue "${config.temporal.taskQueue}".`,
    );
  } finally {
    await client.connection.close();
  }
}

function readInterval(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_RECONCILE_INTERVAL_MS;
  const interval = Number(value);
  if (!/^[0-9]+$/.test(value.trim()) || interval < 10_000) {
    throw new ConfigError([
      `RECONCILE_INTERVAL_MS must be an integer of at least 10000 (got ${JSON.stringify(value)}).`,
    ]);
  }
  return interval;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
