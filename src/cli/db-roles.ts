// `npm run db:roles`: makes the least-privilege logins (src/db/roles.ts) from ADMIN_DATABASE_URL and the
// service's URLs, once per database (docs/production.md "Least privilege").
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { setUpDatabaseRoles } from '../db/roles';
import { describePostgresFailure } from '../dependencyRetry';

async function main(): Promise<void> {
  const names = ['ADMIN_DATABASE_URL', 'MIGRATION_DATABASE_URL', 'DATABASE_URL'] as const;
  const missing = names.filter((name) => !process.env[name]?.trim());
  if (missing.length > 0) throw new Error(`${missing.join(', ')} required (see src/cli/db-roles.ts).`);
  const adminUrl = process.env.ADMIN_DATABASE_URL!.trim();
  const report = await setUpDatabaseRoles({
    adminUrl,
    migrationUrl: process.env.MIGRATION_DATABASE_URL!.trim(),
    workerUrl: process.env.DATABASE_URL!.trim(),
    ...(process.env.WEBHOOK_DATABASE_URL?.trim()
      ? { webhookUrl: process.env.WEBHOOK_DATABASE_URL.trim() }
      : {}),
    ...(process.env.OPS_DATABASE_URL?.trim() ? { operatorUrl: process.env.OPS_DATABASE_URL.trim() } : {}),
  }).catch((error: unknown) => {
    // Only the admin URL is connected to; the other two give users and passwords.
    throw new Error(describePostgresFailure(error, adminUrl, 'ADMIN_DATABASE_URL'), { cause: error });
  });
  console.log(
    `Database ${report.database}: migrations run as ${report.migrator}, workers as ${report.worker} ` +
      `(member of order_mail_worker)` +
      `${report.webhooks === null ? '' : `, the webhook receiver as ${report.webhooks} (member of order_mail_webhooks)`}` +
      `${report.operator === null ? '' : `, the operator ${report.operator} (member of order_mail_operators)`}` +
      `${report.created.length ? `; made ${report.created.join(', ')}` : ''}` +
      `${report.ownershipMoved.length ? `; ${report.migrator} now owns ${report.ownershipMoved.join(', ')}` : ''}` +
      `${report.caseStudyTableFrom === null ? '' : `; the case study's order_mail_log now belongs to ${report.migrator} for adoption, and ${report.caseStudyTableFrom} may still write it`}.`,
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
