// `npx tsx dev/bench/postgres/perStatement.ts [--rows 100000] [--orders 2000] [--before <git revision>]`: what
// our Postgres spends per statement of one accepted order, for the product, the card (dev/bench/card) and 2.0.0,
// on one embedded Postgres with pg_stat_statements (track_planning on): each build's own functions called as its
// worker calls them, as a worker login, each build on its own database filled with --rows orders (three items
// each) and their mail rows, one order of each in turn so the machine's load hits all alike. --before runs that
// revision's src/ beside the product, on the product's database. docs/benchmarks.md, "Our Postgres per statement".
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cardClaim, cardRecord } from '../card/statements';
import { markDispatched } from '../../../src/activities/dispatchFence';
import { claimOrderMailRow } from '../../../src/db/orderMailClaim';
import { recordOutcome } from '../../../src/db/orderMailRecord';
import { loadOrderForAttempt, loadOrderForMail } from '../../../src/db/orders';
import { createDatabase, type Database } from '../../../src/db/pool';
import { countProviderSuccess } from '../../../src/db/providerHealth';
import { setUpDatabaseRoles } from '../../../src/db/roles';
import { migrate } from '../../../src/db/migrator';
import { startEmbeddedPostgres } from '../../devtools/embeddedPostgres';
import { PROJECT_ROOT } from '../childProcess';
import { loadAverage, machineFacts } from '../machine';
import { prepareReleaseCheckout, prepareReleaseDatabase } from '../release/release20';
import { fillTo, NEWEST_FILLED_ID } from './fill';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    orders: { type: 'string', default: '2000' },
    before: { type: 'string' },
  },
});
const ROWS = Number(args.rows);
const ORDERS = Number(args.orders);
const WARMUP = Math.min(200, Math.ceil(ORDERS / 10));
const PROVIDER = 'generic';
const DESTINATION = {
  provider: PROVIDER,
  origin: 'http://127.0.0.1:8025',
  scope: null,
  credentialFingerprint: 'sha256:0123456789abcdef',
  account: null,
};
const ITEMS_LIMIT = 51;

type OrderPath = (db: Database, orderId: string) => Promise<void>;

const claimRequest = (orderId: string, claimToken: string) => ({
  orderId,
  claimToken,
  workflowScope: `default/${orderId}/`,
  issuedAt: new Date(),
  policy: 'assume-sent' as const,
  idempotency: null,
  sendTimeoutMs: 60_000,
  recordedBy: 'bench 1@bench',
  verifyDispatchedOrphans: true,
  providers: [PROVIDER],
});

const recordValues = (orderId: string, claimToken: string, attempt: number) => ({
  orderId,
  claimToken,
  attempt,
  state: 'sent' as const,
  outcome: 'accepted' as const,
  unknownPolicy: null,
  providerMessageId: `sbx_${orderId}`,
  httpStatus: 202,
  error: null,
  recordedBy: 'bench 1@bench',
  expectDispatched: true,
});

interface ProductModules {
  claimOrderMailRow: typeof claimOrderMailRow;
  loadOrderForAttempt: typeof loadOrderForAttempt;
  markDispatched: typeof markDispatched;
  countProviderSuccess: typeof countProviderSuccess;
  recordOutcome: typeof recordOutcome;
}

/** The product's accepted path: claim, the order with the attempt's provider, fence, health count, record. */
const productPath =
  (m: ProductModules): OrderPath =>
  async (db, orderId) => {
    const { claimOrderMailRow, loadOrderForAttempt, markDispatched, countProviderSuccess, recordOutcome } = m;
    const claimToken = `default/${orderId}/${randomUUID()}`;
    const claim = await claimOrderMailRow(db, claimRequest(orderId, claimToken));
    if (claim.kind !== 'claimed') throw new Error(`product ${orderId}: claim ${claim.kind}`);
    const attempt = { orderId, claimToken, attempt: claim.attempt };
    const read = await loadOrderForAttempt(db, attempt, ITEMS_LIMIT);
    if (read.order === null) throw new Error(`product ${orderId}: no order`);
    const dispatch = { destination: DESTINATION, sendKey: `key-${orderId}`, sendTimeoutMs: 60_000 };
    const fence = await markDispatched(db, { ...attempt, provider: read.provider, dispatch });
    if (fence !== 'dispatched') throw new Error(`product ${orderId}: fence ${fence}`);
    await countProviderSuccess(db, PROVIDER);
    const recorded = await recordOutcome(db, recordValues(orderId, claimToken, claim.attempt));
    if (recorded.kind !== 'recorded') throw new Error(`product ${orderId}: record ${recorded.kind}`);
  };

/** The same functions from `src/` of another revision (--before), extracted with git archive. */
async function productModulesAt(revision: string): Promise<ProductModules> {
  const directory = path.join(PROJECT_ROOT, '.tmp', `per-statement-${revision}`);
  if (!existsSync(path.join(directory, 'src'))) {
    mkdirSync(directory, { recursive: true });
    const tar = `${directory}.tar`;
    execFileSync('git', ['-C', PROJECT_ROOT, 'archive', '--format=tar', '-o', tar, revision, 'src']);
    execFileSync('tar', ['-xf', tar, '-C', directory]);
    rmSync(tar);
  }
  const load = async <T>(file: string): Promise<T> => (await import(path.join(directory, 'src', file))) as T;
  return {
    ...(await load<Pick<ProductModules, 'claimOrderMailRow'>>('db/orderMailClaim.ts')),
    ...(await load<Pick<ProductModules, 'loadOrderForAttempt'>>('db/orders.ts')),
    ...(await load<Pick<ProductModules, 'markDispatched'>>('activities/dispatchFence.ts')),
    ...(await load<Pick<ProductModules, 'countProviderSuccess'>>('db/providerHealth.ts')),
    ...(await load<Pick<ProductModules, 'recordOutcome'>>('db/orderMailRecord.ts')),
  };
}

/** The card's: its claim, loadOrderForMail, its record. */
const cardPath: OrderPath = async (db, orderId) => {
  const claimToken = `card/${orderId}/${randomUUID()}`;
  if ((await cardClaim(db, orderId, claimToken)) === null) throw new Error(`card ${orderId}: not claimed`);
  if ((await loadOrderForMail(db, orderId)) === null) throw new Error(`card ${orderId}: no order`);
  const outcome = {
    state: 'sent',
    outcome: 'accepted',
    providerMessageId: `sbx_${orderId}`,
    httpStatus: 202,
    error: null,
  } as const;
  if (!(await cardRecord(db, orderId, claimToken, outcome))) throw new Error(`card ${orderId}: not recorded`);
};

/** 2.0.0's, from its own checkout (dev/bench/release): the same calls as its activities make. */
async function releasePath(directory: string): Promise<{ run: OrderPath; pool: typeof createDatabase }> {
  const module = (file: string): Promise<Record<string, (...args: unknown[]) => Promise<never>>> =>
    import(path.join(directory, file)) as never;
  const { claimOrderMailRow: claim } = await module('src/db/orderMailClaim.ts');
  const { readAttemptProvider, markDispatched: fence } = await module('src/activities/dispatchFence.ts');
  const { loadOrderForMail: load } = await module('src/db/orders.ts');
  const { countProviderSuccess: healthy } = await module('src/db/providerHealth.ts');
  const { recordOutcome: record } = await module('src/db/orderMailRecord.ts');
  // Its own pool: its connection options tell its trigger the service is writing (2.0's migration 0009).
  const { createDatabase: pool } = await module('src/db/pool.ts');
  const run: OrderPath = async (db, orderId) => {
    const claimToken = `default/${orderId}/${randomUUID()}`;
    const claimed = (await claim!(db, claimRequest(orderId, claimToken))) as {
      kind: string;
      attempt: number;
    };
    if (claimed.kind !== 'claimed') throw new Error(`2.0 ${orderId}: claim ${claimed.kind}`);
    const attempt = { orderId, claimToken, attempt: claimed.attempt };
    const provider = (await readAttemptProvider!(db, attempt)) as string | null;
    if ((await load!(db, orderId, ITEMS_LIMIT)) === null) throw new Error(`2.0 ${orderId}: no order`);
    const dispatch = { destination: DESTINATION, sendKey: `key-${orderId}`, sendTimeoutMs: 60_000 };
    const passed = (await fence!(db, { ...attempt, provider, dispatch })) as string;
    if (passed !== 'dispatched') throw new Error(`2.0 ${orderId}: fence ${passed}`);
    await healthy!(db, PROVIDER);
    const recorded = (await record!(db, recordValues(orderId, claimToken, claimed.attempt))) as {
      kind: string;
    };
    if (recorded.kind !== 'recorded') throw new Error(`2.0 ${orderId}: record ${recorded.kind}`);
  };
  return { run, pool: pool as unknown as typeof createDatabase };
}

/** --rows filled orders with three items each, then `count` new confirmed orders; returns the new ids. */
async function fill(admin: Database, count: number): Promise<string[]> {
  // History, not writes by a worker: the mail tables' triggers (who is the service; 2.0's differ) stay out.
  const triggers = (how: string) =>
    admin.query(
      `ALTER TABLE order_mail_log ${how} TRIGGER USER; ALTER TABLE order_mail_attempts ${how} TRIGGER USER`,
    );
  await triggers('DISABLE');
  await fillTo(admin, ROWS, new Date(), () => undefined);
  await triggers('ENABLE');
  await admin.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [NEWEST_FILLED_ID + 1]);
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
     SELECT '山田 太郎', 'new' || g || '@example.com', 'confirmed', now() FROM generate_series(1, $1::int) AS g
     RETURNING id::text`,
    [count],
  );
  await admin.query(
    `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
     SELECT o.id, n, '緑茶 ' || n, n, 1200 * n FROM orders AS o, generate_series(1, 3) AS n`,
  );
  await admin.query('VACUUM (ANALYZE) orders, order_items, order_mail_log, order_mail_attempts');
  return rows.map((row) => row.id);
}

const loginUrl = (adminUrl: string, user: string): string => {
  const url = new URL(adminUrl);
  url.username = user;
  url.password = randomBytes(16).toString('hex');
  return url.toString();
};

const fillPool = (url: string): Database =>
  createDatabase({ connectionString: url, applicationName: 'fill', statementTimeoutMs: 3_600_000 });

/** A database of the product's schema, with production's logins (npm run db:roles), as the bench makes it. */
async function productDatabase(serverUrl: string, name: string) {
  const admin = createDatabase({ connectionString: serverUrl, applicationName: 'per-statement' });
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.close();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const workerUrl = loginUrl(url.toString(), `order_mail_${name}_worker`);
  const migrationUrl = loginUrl(url.toString(), `order_mail_${name}_migrator`);
  await setUpDatabaseRoles({ adminUrl: url.toString(), migrationUrl, workerUrl });
  await migrate(migrationUrl);
  return { admin: fillPool(url.toString()), workerUrl };
}

async function main(): Promise<void> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const postgres = await startEmbeddedPostgres();
  const closers: (() => Promise<unknown>)[] = [() => postgres.stop()];
  try {
    const setup = createDatabase({
      connectionString: postgres.connectionString,
      applicationName: 'per-statement',
    });
    await setup.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await setup.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
    await setup.close();
    await postgres.restart();
    const stats = createDatabase({
      connectionString: postgres.connectionString,
      applicationName: 'per-statement',
    });
    closers.unshift(() => stats.close());
    await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const checkout = prepareReleaseCheckout(log);
    const release = await prepareReleaseDatabase(checkout, postgres.connectionString, true, log);
    closers.unshift(() => release.close());
    const releaseName = new URL(release.workerUrl).pathname.slice(1);
    const releaseAdminUrl = new URL(postgres.connectionString);
    releaseAdminUrl.pathname = `/${releaseName}`;
    const releaseAdmin = fillPool(releaseAdminUrl.toString());
    closers.unshift(() => releaseAdmin.close());
    const builds: { name: string; database: string; db: Database; run: OrderPath; orders: string[] }[] = [];
    const here = {
      claimOrderMailRow,
      loadOrderForAttempt,
      markDispatched,
      countProviderSuccess,
      recordOutcome,
    };
    for (const [name, run] of [
      ['product', productPath(here)],
      ['card', cardPath],
    ] as const) {
      const made = await productDatabase(postgres.connectionString, name);
      closers.unshift(() => made.admin.close());
      // With --before, that revision runs on the product's own database and pool, its orders interleaved with
      // the product's: a statement both send is one row of the table (calls/order 2), one changed is two.
      const twice = name === 'product' && args.before !== undefined;
      const orders = await fill(made.admin, twice ? 2 * ORDERS : ORDERS);
      const db = createDatabase({ connectionString: made.workerUrl, applicationName: `${name} worker` });
      closers.unshift(() => db.close());
      builds.push({ name, database: name, db, run, orders: orders.slice(0, ORDERS) });
      if (twice) {
        const before = productPath(await productModulesAt(args.before!));
        builds.push({
          name: `at ${args.before}`,
          database: name,
          db,
          run: before,
          orders: orders.slice(ORDERS),
        });
      }
    }
    const release20 = await releasePath(checkout.directory);
    const releaseDb = release20.pool({ connectionString: release.workerUrl, applicationName: '2.0 worker' });
    closers.unshift(() => releaseDb.close());
    builds.push({
      name: '2.0.0',
      database: releaseName,
      db: releaseDb,
      run: release20.run,
      orders: await fill(releaseAdmin, ORDERS),
    });
    const load = [loadAverage()];
    for (let index = 0; index < ORDERS; index++) {
      if (index === WARMUP) await stats.query('SELECT pg_stat_statements_reset()');
      // Each order's turn in a rotating order, so no build always runs first.
      for (let turn = 0; turn < builds.length; turn++) {
        const build = builds[(index + turn) % builds.length]!;
        await build.run(build.db, build.orders[index]!);
      }
    }
    load.push(loadAverage());
    const measured = ORDERS - WARMUP;
    const machine = machineFacts();
    console.log(
      `${machine.cpuModel}, ${machine.cores} cores; load average ${load.map((l) => l.join(' ')).join(' -> ')}`,
    );
    console.log(
      `${ROWS} filled orders per database (3 items each); ${measured} orders per build after ${WARMUP}`,
    );
    console.log(['calls/order', 'exec µs', 'plan µs', 'µs/order', 'blocks/call', 'statement'].join('\t'));
    for (const build of builds.filter(
      (each, index) => builds.findIndex((other) => other.database === each.database) === index,
    )) {
      const { rows } = await stats.query<Record<string, string>>(
        `SELECT round(s.calls::numeric / $2, 2)::text AS per_order,
                round((s.mean_exec_time * 1000)::numeric)::text AS exec_us,
                round((s.mean_plan_time * 1000)::numeric)::text AS plan_us,
                round(((s.total_exec_time + s.total_plan_time) * 1000 / $2)::numeric)::text AS us_per_order,
                round((s.shared_blks_hit + s.shared_blks_read)::numeric / s.calls, 1)::text AS blocks,
                left(regexp_replace(s.query, '\\s+', ' ', 'g'), 100) AS statement
           FROM pg_stat_statements AS s JOIN pg_database AS d ON d.oid = s.dbid
          WHERE d.datname = $1 AND s.calls >= $2
          ORDER BY s.total_exec_time + s.total_plan_time DESC`,
        [build.database, measured],
      );
      const total = rows.reduce((sum, row) => sum + Number(row.us_per_order), 0);
      const names = builds.filter((other) => other.database === build.database).map((other) => other.name);
      console.log(
        `-- ${names.join(' and ')}: ${total} µs per order${names.length > 1 ? ' (both together)' : ''}`,
      );
      for (const row of rows) console.log(Object.values(row).join('\t'));
    }
  } finally {
    for (const close of closers) await close().catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
