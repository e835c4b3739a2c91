// `npm run local`, README's "Run it": it comes up in the background, its env file (sourced as the README says)
// is a configuration the worker accepts with the service's own logins, `--order` confirms an order once, and
// `--down` stops every process and keeps nothing.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const DIRECTORY = path.join(mkdtempSync(path.join(tmpdir(), 'local-test-')), 'local');

function local(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/cli/local.ts', ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, LOCAL_DIRECTORY: DIRECTORY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The environment a shell has after `set -a; . env; set +a`, as README's "Run it" sources it. */
function sourced(envFile: string): Record<string, string> {
  const shell = spawnSync('bash', ['-c', `set -a; . "$1"; set +a; env -0`, 'bash', envFile], {
    env: { PATH: '/usr/bin:/bin' },
    encoding: 'utf8',
  });
  expect(shell.status, shell.stderr).toBe(0);
  return Object.fromEntries(
    shell.stdout
      .split('\0')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

afterAll(async () => {
  // Only when something may still run: a finished test's down removed the directory (up makes it first).
  if (existsSync(DIRECTORY)) await local('--down');
}, 60_000);

it('up, its settings, an order confirmed once, down', async () => {
  const up = await local();
  expect(up.code, up.stderr + up.stdout).toBe(0);
  const envFile = path.join(DIRECTORY, 'env');
  const env = sourced(envFile);

  // What the worker would start with; its Node first on PATH is the pinned one.
  const config = loadConfig(env);
  expect(config.temporal.address).toMatch(/^127\.0\.0\.1:\d+$/);
  const node = spawnSync('node', ['--version'], { env, encoding: 'utf8' });
  expect(node.stdout.trim()).toBe(process.version);

  // The worker's login is the service's own, not the admin: a member of order_mail_worker, no superuser.
  const worker = new Client({ connectionString: env.DATABASE_URL });
  await worker.connect();
  try {
    const { rows } = await worker.query<{ member: boolean; superuser: boolean }>(
      `SELECT pg_has_role(current_user, 'order_mail_worker', 'member') AS member,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser`,
    );
    expect(rows[0]).toEqual({ member: true, superuser: false });

    // A bad id is refused before anything is read: it needs no other command to finish first.
    const [confirmed, bad] = await Promise.all([local('--order', '1001'), local('--order', 'abc')]);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(bad.code).toBe(2);
    const again = await local('--order', '1001');
    expect(again.code).toBe(1);
    // The workers' login reads orders through the order contract's view, as the worker does.
    const orders = await worker.query(
      `SELECT order_id::text AS id, status FROM order_mail_source.orders_for_mail`,
    );
    expect(orders.rows).toEqual([{ id: '1001', status: 'confirmed' }]);
  } finally {
    await worker.end();
  }

  const state = JSON.parse(readFileSync(path.join(DIRECTORY, 'state.json'), 'utf8')) as { pid: number };
  const down = await local('--down');
  expect(down.code).toBe(0);
  expect(existsSync(DIRECTORY)).toBe(false);
  expect(() => process.kill(-state.pid, 0)).toThrow();
}, 240_000);
