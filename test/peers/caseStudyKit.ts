// The case study's system as the tests run it: the shop's database (our model of its `orders`, and its own
// `order_mail_log` created with the case study's DDL), its Redis job queue, and its Python mail workers as
// real processes (dev/peers/python/case_study_worker.py).
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client as PgClient, escapeIdentifier } from 'pg';
import { inject } from 'vitest';
import { createDatabase, type Database } from '../../src/db/pool';
import { createIsolatedDatabase } from '../../dev/devtools/testDatabases';
import { createOutsideLogin } from '../support/testKit';
import { DEFAULT_SANDBOX_API_KEY } from '../../packages/sandbox/src/mailSandbox';
import { PYTHON_PEERS_DIRECTORY, spawnPythonPeer, type PeerProcess } from '../../dev/peers/pythonPeers';
import type { RedisServer } from '../../dev/peers/redisServer';
import { CASE_STUDY_STATEMENTS } from '../../src/mailRow/statements';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
/** The shop's orders and their items, as this project models them (the service reads only these columns). */
const ORDERS_DDL = ['0001_orders.sql', '0002_order_items.sql'].map((name) =>
  path.join(PROJECT_ROOT, 'src', 'db', 'migrations', name),
);
/** The case study's order_mail_log, word for word. */
export const CASE_STUDY_MAIL_LOG_DDL = path.join(PYTHON_PEERS_DIRECTORY, 'order_mail_log.sql');

export interface CaseStudyDatabase {
  db: Database;
  /** This service's login (the run's admin, a member of order_mail_worker). */
  connectionString: string;
  /**
   * The case study's own login, which owns its order_mail_log and is in none of this service's groups: its
   * workers and its statements run as it, as they would in the shop (docs/adoption.md).
   */
  caseStudyConnectionString: string;
  close(): Promise<void>;
}

/** A database of its own holding the shop's tables as the case study has them, before any adoption. */
export async function openCaseStudyDatabase(prefix: string): Promise<CaseStudyDatabase> {
  const isolated = await createIsolatedDatabase(inject('databaseUrl'), prefix);
  const db = createDatabase({
    connectionString: isolated.connectionString,
    applicationName: `test ${prefix}`,
  });
  const caseStudyLogin = await createOutsideLogin(db, isolated.connectionString, 'case_study');
  try {
    for (const ddl of ORDERS_DDL) await db.query(await readFile(ddl, 'utf8'));
    await db.query(await readFile(CASE_STUDY_MAIL_LOG_DDL, 'utf8'));
    const login = escapeIdentifier(caseStudyLogin.user);
    await db.query(`ALTER TABLE order_mail_log OWNER TO ${login}`);
    await db.query(`GRANT SELECT ON orders, order_items TO ${login}`);
    // Order ids far apart per file, as openTestDatabase does, in case a test also starts workflows for them.
    const offset = 1_000_000 + Math.floor(Math.random() * 8_000_000_000) * 1_000;
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [offset]);
  } catch (error) {
    await db.close();
    await isolated.drop();
    await caseStudyLogin.drop();
    throw error;
  }
  return {
    db,
    connectionString: isolated.connectionString,
    caseStudyConnectionString: caseStudyLogin.connectionString,
    async close() {
      await db.close();
      await isolated.drop();
      await caseStudyLogin.drop();
    },
  };
}

export interface CaseStudyWorkerSettings {
  databaseUrl: string;
  redis: RedisServer;
  /** The Redis list the workers take jobs from; one per test keeps tests apart. */
  queue: string;
  mailApiBaseUrl: string;
  /** Any other variable of case_study_worker.py (JOB_MAX_ATTEMPTS, MAIL_HEADERS_TIMEOUT_MS, …). */
  env?: Record<string, string>;
}

/** A fresh queue name for one test. */
export function newQueueName(): string {
  return `order_mail_jobs_${randomUUID().slice(0, 8)}`;
}

export function startCaseStudyWorkers(count: number, settings: CaseStudyWorkerSettings): PeerProcess[] {
  return Array.from({ length: count }, (_, index) => {
    const name = `case-study-worker-${index + 1}`;
    return spawnPythonPeer(name, 'case_study_worker.py', [], {
      DATABASE_URL: settings.databaseUrl,
      REDIS_URL: settings.redis.url,
      MAIL_QUEUE: settings.queue,
      MAIL_API_BASE_URL: settings.mailApiBaseUrl,
      MAIL_API_KEY: DEFAULT_SANDBOX_API_KEY,
      MAIL_CONNECT_TIMEOUT_MS: '1000',
      MAIL_HEADERS_TIMEOUT_MS: '3000',
      WORKER_NAME: name,
      ...settings.env,
    });
  });
}

/** Pushes one job per id, in order, as the shop's order service does after each commit. */
export async function enqueueOrders(redis: RedisServer, queue: string, orderIds: string[]): Promise<void> {
  if (orderIds.length === 0) return;
  await redis.command('RPUSH', queue, ...orderIds.map((orderId) => JSON.stringify({ order_id: orderId })));
}

export async function queueLength(redis: RedisServer, queue: string): Promise<number> {
  const length = await redis.command('LLEN', queue);
  if (typeof length !== 'number') throw new Error(`LLEN ${queue} answered ${JSON.stringify(length)}`);
  return length;
}

/**
 * True when the queue is empty and `workers` clients wait in BLPOP: then no worker holds a job (a job in
 * hand may still fail and be pushed again), so what the rows and the sandbox say now is final. Read from
 * Redis's own CLIENT LIST, not from the workers' logs.
 */
export async function queueDrained(redis: RedisServer, queue: string, workers: number): Promise<boolean> {
  if ((await queueLength(redis, queue)) > 0) return false;
  const list = await redis.command('CLIENT', 'LIST');
  if (typeof list !== 'string') throw new Error(`CLIENT LIST answered ${JSON.stringify(list)}`);
  const blocked = list
    .split('\n')
    .filter((line) => /\bcmd=blpop\b/.test(line) && /\bflags=\S*b/.test(line)).length;
  return blocked >= workers && (await queueLength(redis, queue)) === 0;
}

export interface CaseStudyRow {
  state: 'sending' | 'sent' | 'failed';
  attempts: number;
}

/** The case study's columns of each order's row; orders without a row are absent from the map. */
export async function readCaseStudyRows(
  db: Database,
  orderIds: string[],
): Promise<Map<string, CaseStudyRow>> {
  const { rows } = await db.query<{ orderId: string; state: CaseStudyRow['state']; attempts: number }>(
    `SELECT order_id::text AS "orderId", state, attempts FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  return new Map(rows.map((row) => [row.orderId, { state: row.state, attempts: row.attempts }]));
}

/**
 * The case study's four statements, word for word (dev/peers/python/case_study_worker.py runs the same text;
 * test/db/caseStudyWriters.test.ts checks it does), kept with every other statement writing the row.
 */
export { CASE_STUDY_STATEMENTS };

/**
 * A writer that knows only the case study's statements, under a login in none of this service's groups (the
 * case study's own, `caseStudyConnectionString`), as the old Python workers or an operator's psql have.
 */
export interface OutsideWriter {
  /** The case study's claim: the INSERT, then the UPDATE of a failed row; true when one changed a row. */
  claim(orderId: string): Promise<boolean>;
  /** The case study's record; returns the statement's row count (the case study ignores it). */
  record(orderId: string, state: 'sent' | 'failed'): Promise<number>;
  close(): Promise<void>;
}

export async function openOutsideWriter(connectionString: string): Promise<OutsideWriter> {
  const client = new PgClient({ connectionString, application_name: 'case-study-statements' });
  await client.connect();
  return {
    async claim(orderId) {
      const inserted = await client.query(CASE_STUDY_STATEMENTS.claim, [orderId]);
      if (inserted.rowCount === 1) return true;
      const reclaimed = await client.query(CASE_STUDY_STATEMENTS.reclaim, [orderId]);
      return reclaimed.rowCount === 1;
    },
    async record(orderId, state) {
      const statement =
        state === 'sent' ? CASE_STUDY_STATEMENTS.recordSent : CASE_STUDY_STATEMENTS.recordFailed;
      return (await client.query(statement, [orderId])).rowCount ?? 0;
    },
    close: () => client.end(),
  };
}
