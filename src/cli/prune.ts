// `npm run prune -- --older-than 90d [--dry-run] [--batch-size 1000]` (src/ops/pruneOrderMailHistory.ts); safe
// to stop and run again. Exit codes: 0 done, 1 failed (committed batches stay deleted), 2 bad arguments.
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { parseArgs } from 'node:util';
import { createDatabase } from '../db/pool';
import { describePostgresFailure } from '../dependencyRetry';
import {
  DEFAULT_PRUNE_BATCH_SIZE,
  parseRetention,
  pruneOrderMailHistory,
  PruneRefusedError,
  type PruneResult,
} from '../ops/pruneOrderMailHistory';
import { processIo, type CliIo } from './cliIo';

const PRUNE_USAGE = `npm run prune -- --older-than <N>d|<N>h [--dry-run] [--batch-size N]
  Deletes the attempts (and provider webhook events) of order mails settled as sent and untouched for longer
  than --older-than (at least 7d). Log rows, and everything of mails that are failed or still sending, stay.
  --dry-run       count what would be deleted; delete nothing
  --batch-size N  log rows per statement (default ${DEFAULT_PRUNE_BATCH_SIZE}); each batch commits on its own
Environment: DATABASE_URL.`;

export async function main(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
  io: CliIo = processIo,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        'older-than': { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        'batch-size': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (error) {
    io.err(`${error instanceof Error ? error.message : String(error)}\n\n${PRUNE_USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(PRUNE_USAGE);
    return 0;
  }
  const olderThanText = values['older-than'];
  const olderThanMs = olderThanText === undefined ? null : parseRetention(olderThanText);
  const batchSize =
    values['batch-size'] === undefined ? DEFAULT_PRUNE_BATCH_SIZE : Number(values['batch-size']);
  const problems = [
    ...(olderThanMs === null ? ['--older-than is required, as days or hours: e.g. --older-than 90d'] : []),
    ...(Number.isInteger(batchSize) && batchSize > 0 ? [] : ['--batch-size must be a positive whole number']),
    ...(env.DATABASE_URL?.trim() ? [] : ['DATABASE_URL is required']),
  ];
  if (problems.length > 0 || olderThanMs === null) {
    io.err(`${problems.join('; ')}.\n\n${PRUNE_USAGE}`);
    return 2;
  }

  const db = createDatabase({
    connectionString: env.DATABASE_URL!.trim(),
    applicationName: 'order-mail-prune',
  });
  try {
    const result = await pruneOrderMailHistory(db, { olderThanMs, batchSize, dryRun: values['dry-run'] });
    io.out(describe(result));
    return 0;
  } catch (error) {
    if (error instanceof PruneRefusedError) {
      io.err(`Refused: ${error.message}`);
      return 2;
    }
    io.err(`Failed: ${describePostgresFailure(error, env.DATABASE_URL!.trim(), 'DATABASE_URL')}`);
    return 1;
  } finally {
    await db.close();
  }
}

function describe(result: PruneResult): string {
  const verb = result.dryRun ? 'would delete' : 'deleted';
  const events =
    result.providerEventsDeleted === null
      ? 'no provider-events table'
      : `${result.providerEventsDeleted} provider event(s)`;
  return (
    `Mails settled as sent before ${result.cutoff.toISOString()}: ${result.logRowsExamined} looked at in ` +
    `${result.batches} batch(es); ${verb} ${result.attemptsDeleted} attempt row(s), ` +
    `${result.lateAnswersDeleted} late answer(s), ${events}. No log row was deleted.`
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 1;
    },
  );
}
