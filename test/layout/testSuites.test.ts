// Every test file belongs to exactly one suite: `npm test` (vitest.config.mts) or `npm run test:stack`
// (vitest.stack.config.mts), and to one project of it. A file neither config collects would never run, in CI or
// anywhere; one both collect, or two projects, would run twice. Read from the configs' own include and exclude,
// so moving a file between the suites needs no change here.
import { globSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.join(__dirname, '..', '..');
// What vitest would take for a test file by its name, wherever it lies (its default include, widened).
const TEST_FILE = '**/*.{test,spec}.{ts,mts,cts,tsx,js,mjs,cjs,jsx}';
const NEVER = ['**/node_modules/**', '**/.git/**', 'dist/**', '**/dist/**'];

interface Suite {
  name: string;
  include: string[];
  exclude: string[];
}

interface TestConfig {
  name?: string;
  include?: string[];
  exclude?: string[];
  projects?: { test?: TestConfig }[];
}

/** The suite's projects, or the suite itself when it has none. */
async function suite(name: string, file: string): Promise<Suite[]> {
  const config = ((await import(path.join(root, file))) as { default: { test?: TestConfig } }).default.test;
  const parts = config?.projects?.map((project) => project.test ?? {}) ?? [config ?? {}];
  return parts.map((part) => ({
    name: part.name === undefined ? name : `${name} (${part.name})`,
    include: part.include ?? [],
    exclude: part.exclude ?? [],
  }));
}

function collects(suite: Suite, file: string): boolean {
  return (
    suite.include.some((pattern) => path.matchesGlob(file, pattern)) &&
    !suite.exclude.some((pattern) => path.matchesGlob(file, pattern))
  );
}

it('every test file is in exactly one of `npm test` and `npm run test:stack`, and in one project of it', async () => {
  const suites = [
    ...(await suite('npm test', 'vitest.config.mts')),
    ...(await suite('npm run test:stack', 'vitest.stack.config.mts')),
  ];
  const files = globSync(TEST_FILE, { cwd: root, exclude: NEVER }).sort();
  expect(files.length).toBeGreaterThan(100);
  const misplaced = files
    .map((file) => ({ file, suites: suites.filter((s) => collects(s, file)).map((s) => s.name) }))
    .filter((entry) => entry.suites.length !== 1);
  expect(misplaced).toEqual([]);
  // Each suite collects something, so a config that lost its include cannot pass unnoticed.
  for (const s of suites)
    expect(
      files.some((file) => collects(s, file)),
      s.name,
    ).toBe(true);
});
