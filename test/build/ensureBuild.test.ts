// In a checkout the production npm scripts (ops, start, start-mail, setup, db:migrate) run dist/, so their
// pre-scripts build it first when it is missing or older than src/. Tried in a temporary copy of the checkout:
// an operator's first `npm run ops` works, the second does not rebuild, and an edited source is rebuilt.
import { execFile } from 'node:child_process';
import { cp, rm, stat, symlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scratchDirectory } from '../support/scratch';

const run = promisify(execFile);
const PROJECT_ROOT = path.join(__dirname, '..', '..');
const BUILD_TIMEOUT_MS = 180_000;
let checkout: string;

beforeAll(async () => {
  checkout = await scratchDirectory('ensure-build-');
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts']) {
    await cp(path.join(PROJECT_ROOT, entry), path.join(checkout, entry), { recursive: true });
  }
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(checkout, 'node_modules'), 'dir');
});

afterAll(async () => {
  if (checkout !== undefined) await rm(checkout, { recursive: true, force: true });
});

async function stampTime(): Promise<number> {
  return (await stat(path.join(checkout, 'dist', '.built-from-src'))).mtimeMs;
}

it(
  'builds dist/ before the ops CLI when it is missing or stale, and not otherwise',
  async () => {
    const first = await run('npm', ['run', '--silent', 'ops', '--', '--help'], { cwd: checkout });
    expect(first.stdout).toContain('OPS_DATABASE_URL');
    const builtAt = await stampTime();

    await run('npm', ['run', '--silent', 'ops', '--', '--help'], { cwd: checkout });
    expect(await stampTime()).toBe(builtAt);

    // An edited source, one second newer than the stamp (file systems with coarse mtimes).
    const edited = path.join(checkout, 'src', 'client.ts');
    const later = new Date(builtAt + 1_000);
    await utimes(edited, later, later);
    await run('npm', ['run', '--silent', 'ops', '--', '--help'], { cwd: checkout });
    expect(await stampTime()).toBeGreaterThan(builtAt);
  },
  2 * BUILD_TIMEOUT_MS,
);
