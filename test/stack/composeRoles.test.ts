// `docker compose up` with the settings docs/production.md names, as far as it goes without a Docker engine:
// `docker-compose config` resolves the compose file with a .env made by those steps (cp .env.example .env,
// then the values the page says to set), and the one-shot jobs that gave up before (db-roles refused
// .env.example's placeholder passwords) run their own commands natively with exactly the environment
// compose gives them, against a Postgres of this test's own (the roles are cluster-wide): db-roles, then
// migrate, then a worker's login reads what it must and nothing more.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../dev/devtools/embeddedPostgres';
import { PROJECT_ROOT } from '../../dev/stack/stackSettings';

const run = promisify(execFile);
// What docs/production.md's Docker Compose section tells a user to set in .env (and nothing else).
const DOCUMENTED = {
  POSTGRES_PASSWORD: 'pg-superuser-7f3a9c41d2',
  MIGRATOR_DB_PASSWORD: 'migrator-2b8e41d6c9a05',
  WORKER_DB_PASSWORD: 'worker-9c5d0a7e13f7b2',
  TEMPORAL_DB_PASSWORD: 'temporal-server-4d2a9e61b7',
  MAIL_SANDBOX_API_KEY: 'sandbox-key',
  MAIL_API_KEY_IN_COMPOSE: 'sandbox-key',
  MAIL_DEPLOYMENT_ID: 'shop-local',
};

let project: string;
let postgres: EmbeddedPostgresServer;
let services: Record<string, { environment?: Record<string, string>; command?: string[] }>;

beforeAll(async () => {
  project = await mkdtemp(path.join(tmpdir(), 'compose-roles-'));
  for (const entry of ['docker-compose.yml', 'Dockerfile', 'deploy']) {
    await cp(path.join(PROJECT_ROOT, entry), path.join(project, entry), { recursive: true });
  }
  let env = await readFile(path.join(PROJECT_ROOT, '.env.example'), 'utf8');
  for (const [name, value] of Object.entries(DOCUMENTED)) {
    env = env.replace(new RegExp(`^${name}=.*$`, 'm'), `${name}=${value}`);
  }
  await writeFile(path.join(project, '.env'), env);
  const { stdout } = await run('docker-compose', ['config'], { cwd: project });
  services = (parse(stdout) as { services: typeof services }).services;

  // The postgresql service and the temporal-schema job's part for the app: the superuser of .env, and the
  // shop database.
  postgres = await startEmbeddedPostgres();
  const admin = new Client({ connectionString: postgres.connectionString });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE temporal SUPERUSER LOGIN PASSWORD '${DOCUMENTED.POSTGRES_PASSWORD}'`);
    await admin.query('CREATE DATABASE shop OWNER temporal');
  } finally {
    await admin.end();
  }
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  if (project !== undefined) await rm(project, { recursive: true, force: true });
});

/** A service's environment as compose resolved it, pointed at this test's Postgres instead of `postgresql`. */
function environmentOf(service: string): Record<string, string> {
  const port = new URL(postgres.connectionString).port;
  return Object.fromEntries(
    Object.entries(services[service]?.environment ?? {}).map(([key, value]) => [
      key,
      String(value).replace('@postgresql:5432/', `@127.0.0.1:${port}/`),
    ]),
  );
}

/** The job's own command (`node dist/cli/x.js`), run from the sources as `src/cli/x.ts`. */
async function runJob(service: string): Promise<string> {
  const command = services[service]?.command ?? [];
  expect(command.slice(0, 1)).toEqual(['node']);
  const script = command[1]!.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts');
  const { stdout } = await run(process.execPath, ['--import', 'tsx', script], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...environmentOf(service) },
  });
  return stdout;
}

it('db-roles and migrate succeed with the documented settings, and the worker gets a login of least privilege', async () => {
  expect(await runJob('db-roles')).toMatch(
    /migrations run as order_mail_migrator, workers as order_mail_app/,
  );
  expect(await runJob('migrate')).toMatch(/Applied \d+ migration\(s\)/);

  const worker = new Client({ connectionString: environmentOf('worker').DATABASE_URL });
  await worker.connect();
  try {
    expect((await worker.query('SELECT count(*)::int AS n FROM order_mail_log')).rows[0]).toEqual({ n: 0 });
    await expect(worker.query('CREATE TABLE not_mine (id int)')).rejects.toMatchObject({ code: '42501' });
  } finally {
    await worker.end();
  }
  // And it holds no one else's password.
  expect(JSON.stringify(environmentOf('worker'))).not.toContain(DOCUMENTED.POSTGRES_PASSWORD);
  expect(JSON.stringify(environmentOf('worker'))).not.toContain(DOCUMENTED.MIGRATOR_DB_PASSWORD);
});
