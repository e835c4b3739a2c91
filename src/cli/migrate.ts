// `npm run db:migrate [-- --adopt]`: the migrations, as their own step under their own role
// (MIGRATION_DATABASE_URL, docs/production.md); --adopt keeps the case study's rows (docs/adoption.md).
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { parseArgs } from 'node:util';
import { migrate } from '../db/migrator';
import { describePostgresFailure } from '../dependencyRetry';

const USAGE = `Usage: MIGRATION_DATABASE_URL=postgres://… npm run db:migrate [-- --adopt]
  --adopt   adopt an order_mail_log in the case study's shape (read docs/adoption.md first)
Without MIGRATION_DATABASE_URL, DATABASE_URL is used (a development database with one role).`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      adopt: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const migrationUrl = process.env.MIGRATION_DATABASE_URL?.trim() || undefined;
  const databaseUrl = migrationUrl ?? (process.env.DATABASE_URL?.trim() || undefined);
  if (databaseUrl === undefined) {
    throw new Error(
      `MIGRATION_DATABASE_URL is required, e.g. postgres://order_mail_migrator:…@localhost:5432/shop\n${USAGE}`,
    );
  }
  if (migrationUrl === undefined)
    console.log('MIGRATION_DATABASE_URL is not set: migrating with DATABASE_URL.');
  const report = await migrate(databaseUrl, {
    adopt: values.adopt,
    onNotice: (message) => console.log(`postgres: ${message}`),
  }).catch((error: unknown) => {
    const setting = migrationUrl === undefined ? 'DATABASE_URL' : 'MIGRATION_DATABASE_URL';
    throw new Error(describePostgresFailure(error, databaseUrl, setting), { cause: error });
  });
  console.log(
    `Applied ${report.applied.length} migration(s)${report.applied.length ? `: ${report.applied.join(', ')}` : ''}; ` +
      `${report.alreadyApplied.length} already applied.`,
  );
  if (report.adopted !== null) {
    const { rows, keptAs, writersGranted } = report.adopted;
    console.log(
      `Adopted the case study's order_mail_log: ${rows.sent} sent (final), ${rows.failed} failed (claimable), ` +
        `${rows.sending} sending (unknown outcome: the reconciliation sweep settles them by the policy). ` +
        `The original is kept as ${keptAs}. Its writers (${writersGranted.join(', ')}) may go on writing ` +
        'order_mail_log until the old workers are stopped. Next: docs/adoption.md, step 4.',
    );
  } else if (values.adopt) {
    console.log('Nothing to adopt: order_mail_log is already this service’s table.');
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
