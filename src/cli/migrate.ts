// `npm run db:migrate`: applies the numbered migrations to DATABASE_URL. Safe to run from several places at once.
import { migrate } from '../db/migrate';

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl)
    throw new Error('DATABASE_URL is required, e.g. postgres://user:password@localhost:5432/shop');
  const report = await migrate(databaseUrl);
  console.log(
    `Applied ${report.applied.length} migration(s)${report.applied.length ? `: ${report.applied.join(', ')}` : ''}; ` +
      `${report.alreadyApplied.length} already applied.`,
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
