// Shared set-up for tests that need the real parts: an isolated Postgres database per test file, a Temporal
// client, an in-process worker on its own task queue, and the Mail API sandbox over loopback.
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { escapeIdentifier } from 'pg';
import { inject } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import type { SweepDependencies } from '../../src/activities/sweepActivities';
import { migrate } from '../../src/db/migrator';
import { insertOrder, type NewOrder } from '../../dev/devtools/shopOrders';
import { createDatabase, type Database } from '../../src/db/pool';
import { setUpDatabaseRoles } from '../../src/db/roles';
import { createIsolatedDatabase } from '../../dev/devtools/testDatabases';
import { createMailTransport } from '../../src/mail/createMailTransport';
import { createGenericMailApiClient } from '../../dev/devtools/genericMailApiClient';
import { createSmtpMailTransport, type SmtpConfig } from '../../src/mail/smtp/smtpMailTransport';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  SANDBOX_AWS_ACCESS_KEY_ID,
  SANDBOX_AWS_ACCOUNT_ID,
  SANDBOX_SES_CONFIGURATION_SET,
  SANDBOX_SES_REGION,
} from '../../packages/sandbox/src/providers/ses';
import type { SesSettings } from '../../src/mail/createMailTransport';
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { OrderMailWorkflowSettings } from '../../src/shared/workflowSettings';
import { orderMailWorkerOptions, prebuiltBundleToRun } from '../../src/workerOptions';

export interface TestDatabase {
  db: Database;
  connectionString: string;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file. Order ids start at a random offset so workflow ids (= order
 * ids) never collide with another file's in the shared Temporal namespace.
 */
export async function openTestDatabase(prefix: string): Promise<TestDatabase> {
  // A copy of the run's migrated database: applying every migration again took a second or more per database.
  const template = inject('migratedTemplate');
  const isolated = await createIsolatedDatabase(
    inject('databaseUrl'),
    prefix,
    template === '' ? {} : { template },
  );
  // A no-op on the copy; it still refuses a database migrated otherwise than this build's files say.
  await migrate(isolated.connectionString);
  const db = createDatabase({
    connectionString: isolated.connectionString,
    applicationName: `test ${prefix}`,
  });
  await spreadOrderIds(db);
  return {
    db,
    connectionString: isolated.connectionString,
    async close() {
      await db.close();
      await isolated.drop();
    },
  };
}

export interface OutsideLogin {
  user: string;
  connectionString: string;
  /** Drops the login; call after the database it wrote is dropped (or its grants are gone). */
  drop(): Promise<void>;
}

/**
 * A login of its own, in none of this service's groups (a writer the trigger of migration 0050 takes for an
 * outside one), on the database `connectionString` names. Roles belong to the cluster: the name is unique.
 */
export async function createOutsideLogin(
  admin: Database,
  connectionString: string,
  prefix: string,
): Promise<OutsideLogin> {
  const user = `${prefix}_${randomUUID().slice(0, 8)}`;
  const password = randomBytes(18).toString('base64url');
  await admin.query(`CREATE ROLE ${escapeIdentifier(user)} LOGIN PASSWORD '${password}'`);
  const url = new URL(connectionString);
  url.username = user;
  url.password = password;
  return {
    user,
    connectionString: url.toString(),
    async drop() {
      const cluster = createDatabase({
        connectionString: inject('databaseUrl'),
        applicationName: 'test roles',
      });
      try {
        await cluster.query(`DROP ROLE IF EXISTS ${escapeIdentifier(user)}`);
      } finally {
        await cluster.close();
      }
    },
  };
}

/**
 * An operator's own login (migration 0057): a member of order_mail_operators, which `npm run ops` runs as
 * (OPS_DATABASE_URL) and whose name every act records. The database must be migrated (0057 grants the group).
 */
export async function createOperatorLogin(
  admin: Database,
  connectionString: string,
  prefix: string,
): Promise<OutsideLogin> {
  const login = await createOutsideLogin(admin, connectionString, prefix);
  await admin.query(`GRANT order_mail_operators TO ${escapeIdentifier(login.user)}`);
  return login;
}

let orderCounter = 0;

export function sampleOrder(overrides: Partial<NewOrder> = {}): NewOrder {
  orderCounter += 1;
  return {
    customerName: '山田 太郎',
    customerEmail: `customer${orderCounter}@example.com`,
    items: [
      { productName: '有機緑茶 100g', quantity: 2, unitPriceYen: 1200 },
      { productName: '急須（常滑焼）', quantity: 1, unitPriceYen: 5800 },
    ],
    ...overrides,
  };
}

export async function createOrder(db: Database, overrides: Partial<NewOrder> = {}): Promise<string> {
  return insertOrder(db, sampleOrder(overrides));
}

export async function connectTestClient(): Promise<Client> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  return new Client({ connection, namespace: inject('temporalNamespace') });
}

/** Settings for tests: short timeouts and backoff, so fault paths finish in seconds. */
export function testSettings(overrides: Partial<OrderMailWorkflowSettings> = {}): OrderMailWorkflowSettings {
  return {
    unknownOutcomePolicy: 'assume-sent',
    // 8 s: the transport's 3 s deadline after the fence, 1 s to report, 4 s before the fence.
    sendTimeoutMs: 8_000,
    maxSendAttempts: 5,
    retryInitialIntervalMs: 200,
    retryMaxIntervalMs: 2_000,
    idempotency: null,
    verification: null,
    ...overrides,
  };
}

/** A Mail API client with test-sized deadlines (undici's timers fire up to ~1 s late), unless `deadlines` says. */
export function testMailClient(
  baseUrl: string,
  apiKey = 'sandbox-key',
  deadlines: { headersTimeoutMs?: number; overallTimeoutMs?: number } = {},
): MailTransport {
  return createGenericMailApiClient({
    baseUrl,
    apiKey,
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 4,
    ...deadlines,
  });
}

/** The SMTP transport with test-sized deadlines: plain SMTP, no AUTH, to a sandbox on loopback. */
export function testSmtpTransport(port: number, overrides: Partial<SmtpConfig> = {}): MailTransport {
  return createSmtpMailTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    starttls: 'off',
    user: null,
    password: null,
    poolSize: 2,
    connectTimeoutMs: 1_000,
    replyTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    ...overrides,
  });
}

/** The Mailgun sending domain the tests use; the sandbox accepts any. */
export const TEST_MAILGUN_DOMAIN = 'mg.example.com';

/** A provider adapter on the shared transport, pointed at `baseUrl` (the sandbox), with test-sized deadlines. */
export function testProviderMailClient(
  provider: MailProviderName,
  baseUrl: string,
  apiKey = 'sandbox-key',
): MailTransport {
  return createMailTransport({
    provider,
    baseUrl,
    apiKey,
    mailgunDomain: TEST_MAILGUN_DOMAIN,
    postmarkMessageStream: 'outbound',
    ses: testSesSettings(apiKey),
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 4,
  });
}

export const TEST_SES_CONFIGURATION_SET = SANDBOX_SES_CONFIGURATION_SET;

/** SES settings signing with the sandbox's static AWS keys: its access key id, `secret` as the secret key. */
export function testSesSettings(secret = 'sandbox-key'): SesSettings {
  return {
    region: SANDBOX_SES_REGION,
    configurationSet: TEST_SES_CONFIGURATION_SET,
    accountId: SANDBOX_AWS_ACCOUNT_ID,
    credentials: {
      kind: 'static',
      accessKeyId: SANDBOX_AWS_ACCESS_KEY_ID,
      secretAccessKey: secret,
      sessionToken: null,
    },
  };
}

/**
 * The SDK's debugMode: the workflows run in a reusable V8 context of this process's main thread, the same
 * sandbox as in the worker thread a worker otherwise starts, where each worker compiled the whole bundle again
 * (about 0.3 CPU s a worker, and every activation copied across; issue 38). On the main thread V8 compiles it
 * once per process, for every file sharing the fork. Test workers run so unless a file asks for a thread. The
 * deadlock limit stays the SDK's default (debugMode alone would lift it).
 */
export const WORKFLOWS_ON_MAIN_THREAD = { debugMode: true, isolateExecutionTimeout: '5s' } as const;

export interface RunningTestWorker {
  taskQueue: string;
  stop(): Promise<void>;
}

/** Runs the real worker in-process on a task queue of its own, until stop(). */
export async function startTestWorker(
  dependencies: Omit<ActivityDependencies, 'workerIdentity' | 'mailIdentity'> & Partial<ActivityDependencies>,
  options: {
    taskQueue?: string;
    activities?: object;
    sendRateLimitPerSecond?: number;
    /** Activities one worker runs at once (as WORKER_MAX_CONCURRENT_ACTIVITIES); 20 by default. */
    maxConcurrentActivities?: number;
    reconcile?: SweepDependencies;
    /** Another Temporal server than the run's shared one (e.g. one with a Web UI). */
    temporal?: { address: string; namespace: string };
    /** Poll as this Worker Deployment Version (TEMPORAL_WORKER_DEPLOYMENT_NAME / _BUILD_ID). */
    deployment?: { deploymentName: string; buildId: string };
    /** false: workflows on a thread of the worker's own, as in production, not on this process's main thread. */
    workflowsOnMainThread?: boolean;
  } = {},
): Promise<RunningTestWorker> {
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const temporal = options.temporal ?? {
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
  };
  const connection = await NativeConnection.connect({ address: temporal.address });
  const workerOptions = orderMailWorkerOptions({
    connection,
    namespace: temporal.namespace,
    taskQueue,
    dependencies: {
      workerIdentity: `test-worker-${taskQueue.slice(5, 13)}`,
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      ...dependencies,
    },
    sweepDependencies: options.reconcile,
    // Tracing is off here: the bundle without the interceptors, as the worker picks it.
    workflows: prebuiltBundleToRun(inject('workflowBundlePath'), false),
    shutdownGraceTimeMs: 1_000,
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? 20,
    sendRateLimitPerSecond: options.sendRateLimitPerSecond ?? null,
    deployment: options.deployment ?? null,
  });
  // Tests that simulate lost completions wrap the real activities; everything else runs them as deployed.
  const worker = await Worker.create({
    ...workerOptions,
    activities: options.activities ?? workerOptions.activities,
    ...(options.workflowsOnMainThread === false ? {} : WORKFLOWS_ON_MAIN_THREAD),
  });
  const running = worker.run();
  return {
    taskQueue,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/**
 * Waits for parts started side by side (workers, databases); when one fails, it still waits for the others to
 * settle before it throws, so the file's afterAll finds every part that started, and stops it.
 */
export async function allStarted<T extends readonly unknown[] | []>(
  starts: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(starts);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What a workflow test file needs: its database, the sandbox, a client, and a worker per unknown-outcome policy. */
export interface WorkflowTestBed<P extends UnknownOutcomePolicy = UnknownOutcomePolicy> {
  database: TestDatabase;
  sandbox: MailSandbox;
  mail: MailTransport;
  client: Client;
  workers: Record<P, RunningTestWorker>;
  close(): Promise<void>;
}

/** What every test file with workflows talks to: its database, the sandbox, a mail client on it, a client. */
export interface TestServices {
  database: TestDatabase;
  sandbox: MailSandbox;
  mail: MailTransport;
  client: Client;
}

/** Opens them one by one, pushing each one's close onto `closers` as soon as it is open. */
export async function openTestServices(
  prefix: string,
  closers: (() => Promise<void>)[],
): Promise<TestServices> {
  const database = await openTestDatabase(prefix);
  closers.push(() => database.close());
  const sandbox = await startMailSandbox();
  closers.push(() => sandbox.close());
  const mail = testMailClient(sandbox.url);
  closers.push(() => mail.close());
  const client = await connectTestClient();
  closers.push(() => client.connection.close());
  return { database, sandbox, mail, client };
}

/** Closes in reverse order, each also when one before failed, and empties `closers`; throws the first error. */
export async function closeInReverse(closers: (() => Promise<void>)[]): Promise<void> {
  const errors: unknown[] = [];
  for (const closer of closers.reverse()) await closer().catch((error: unknown) => errors.push(error));
  closers.length = 0;
  if (errors.length > 0) throw errors[0];
}

/**
 * `policies`: the policies whose workers the file runs workflows on (both unless given); a worker nobody uses
 * would still load the bundle and poll for the whole file.
 */
export async function openWorkflowTestBed<P extends UnknownOutcomePolicy = UnknownOutcomePolicy>(
  prefix: string,
  policies: readonly P[] = UNKNOWN_OUTCOME_POLICIES as readonly P[],
): Promise<WorkflowTestBed<P>> {
  // Closed in reverse order, also when a later part fails to start, so nothing is left running.
  const closers: (() => Promise<void>)[] = [];
  const close = (): Promise<void> => closeInReverse(closers);
  try {
    const { database, sandbox, mail, client } = await openTestServices(prefix, closers);
    const worker = async (policy: UnknownOutcomePolicy): Promise<RunningTestWorker> => {
      const running = await startTestWorker({
        db: database.db,
        mail,
        settings: testSettings({ unknownOutcomePolicy: policy }),
      });
      closers.push(() => running.stop());
      return running;
    };
    const workers = {} as Record<P, RunningTestWorker>;
    for (const policy of policies) workers[policy] = await worker(policy);
    return { database, sandbox, mail, client, workers, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

export interface LeastPrivilegeDatabase {
  /** The test run's admin, on this database: makes orders, reads everything. */
  admin: Database;
  adminUrl: string;
  /** The migration role's login (owns the mail tables once migrated). */
  migrationUrl: string;
  /** The workers' login, a member of order_mail_worker. */
  workerUrl: string;
  workerUser: string;
  /** An operator's own login, a member of order_mail_operators (db:roles with OPS_DATABASE_URL). */
  operatorUrl: string;
  operatorUser: string;
  close(): Promise<void>;
}

/**
 * A fresh, NOT migrated database with the roles of least privilege made by `npm run db:roles`'s code:
 * logins of their own (roles belong to the cluster, so each file gets new names), dropped on close.
 */
export async function openLeastPrivilegeDatabase(prefix: string): Promise<LeastPrivilegeDatabase> {
  const isolated = await createIsolatedDatabase(inject('databaseUrl'), prefix);
  const suffix = randomUUID().replace(/-/g, '').slice(0, 10);
  const urlFor = (user: string): string => {
    const url = new URL(isolated.connectionString);
    url.username = user;
    url.password = randomUUID().replace(/-/g, '');
    return url.toString();
  };
  const migrationUrl = urlFor(`test_migrator_${suffix}`);
  const workerUser = `test_worker_${suffix}`;
  const workerUrl = urlFor(workerUser);
  const operatorUser = `test_operator_${suffix}`;
  const operatorUrl = urlFor(operatorUser);
  await setUpDatabaseRoles({
    adminUrl: isolated.connectionString,
    migrationUrl,
    workerUrl,
    operatorUrl,
  });
  const admin = createDatabase({
    connectionString: isolated.connectionString,
    applicationName: `test ${prefix}`,
  });
  return {
    admin,
    adminUrl: isolated.connectionString,
    migrationUrl,
    workerUrl,
    workerUser,
    operatorUrl,
    operatorUser,
    async close() {
      await admin.close();
      await isolated.drop();
      const roles = createDatabase({
        connectionString: inject('databaseUrl'),
        applicationName: 'test roles',
      });
      try {
        for (const user of [workerUser, operatorUser, new URL(migrationUrl).username]) {
          await roles.query(`DROP ROLE IF EXISTS ${escapeIdentifier(user)}`);
        }
      } finally {
        await roles.close();
      }
    },
  };
}

/** Order ids of a database start at a random offset, so workflow ids never collide with another file's. */
export async function spreadOrderIds(db: Database): Promise<void> {
  const offset = 1_000_000 + Math.floor(Math.random() * 8_000_000_000) * 1_000;
  await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [offset]);
}
