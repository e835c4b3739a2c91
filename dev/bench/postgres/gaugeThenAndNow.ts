// The stuck gauge of v1.0.0 (its source read from git) and today's, side by side on a cluster kept by
// `npm run bench:postgres -- --data-dir DIR`, with one claim left behind ten minutes ago: three runs each,
// alternating (so neither always meets the colder cache). It adds that claim and removes it again.
// docs/benchmarks.md quotes its output at 10 million rows.
//   bash scripts/with-node.sh node --import tsx dev/bench/postgres/gaugeThenAndNow.ts .tmp/pg-growth
import { execSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../devtools/embeddedPostgres';
import { countOverdueSending as now } from '../../../src/db/mailLogGauges';
import { createDatabase } from '../../../src/db/pool';

async function main() {
  const dataDir = process.argv[2];
  if (dataDir === undefined)
    throw new Error('usage: gaugeThenAndNow.ts DATA_DIR (a cluster kept by bench:postgres)');
  // v1.0.0's gauge, as it was: its file from the tag, next to this one so that its import resolves.
  const v1Path = path.join(__dirname, '.gaugeV1.generated.ts');
  writeFileSync(
    v1Path,
    execSync('git show v1.0.0:src/db/mailLogGauges.ts', { cwd: path.join(__dirname, '..', '..', '..') })
      .toString()
      .replace("from './pool'", "from '../../../src/db/pool'"),
  );
  let v1: typeof now;
  try {
    ({ countStuckSending: v1 } = (await import(v1Path)) as { countStuckSending: typeof now });
  } finally {
    rmSync(v1Path, { force: true });
  }
  const server = await startEmbeddedPostgres({ dataDir: path.resolve(dataDir), persistent: true });
  const url = new URL(server.connectionString);
  url.pathname = '/order_mail_growth_filled';
  const db = createDatabase({
    connectionString: url.toString(),
    applicationName: 'old gauge',
    statementTimeoutMs: 600_000,
  });
  try {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO orders (customer_name, customer_email, status, confirmed_at) VALUES ('x','stuck@example.com','confirmed', now() - interval '10 minutes') RETURNING id::text`,
    );
    const id = rows[0]!.id;
    await db.query(
      `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, updated_at) VALUES ($1::bigint,'sending',1,'x/'||$1::text||'/stuck', now()-interval '10 minutes', now()-interval '10 minutes', now()-interval '10 minutes')`,
      [id],
    );
    try {
      for (let i = 0; i < 3; i++) {
        const order =
          i % 2 === 0
            ? ([
                ['v1.0.0', v1],
                ['now', now],
              ] as const)
            : ([
                ['now', now],
                ['v1.0.0', v1],
              ] as const);
        for (const [name, fn] of order) {
          const began = performance.now();
          const result = await fn(db, { sendTimeoutMs: 60_000 });
          console.log(name, JSON.stringify(result), (performance.now() - began).toFixed(1), 'ms');
        }
      }
    } finally {
      await db.query('DELETE FROM order_mail_log WHERE order_id = $1', [id]);
      await db.query('DELETE FROM orders WHERE id = $1', [id]);
    }
  } finally {
    await db.close();
    await server.stop();
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
