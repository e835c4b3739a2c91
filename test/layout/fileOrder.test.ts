// `npm test` starts its longest files first (vitest.config.mts), from the durations in test/fileDurations.json,
// so a fresh clone, which has no vitest cache of an earlier run, does not leave a long file to the end.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.join(__dirname, '..', '..');

interface Config {
  longestFirst: (files: readonly string[], durations: Record<string, number>) => string[];
  FILE_DURATIONS: string;
  default: { test?: { sequence?: { sequencer?: { name: string } } } };
}
const config = () => import(path.join(root, 'vitest.config.mts')) as Promise<Config>;

it('orders files missing from the list first, then longest first, ties by path', async () => {
  const { longestFirst } = await config();
  const durations = { 'a.test.ts': 3, 'b.test.ts': 30, 'c.test.ts': 3, 'd.test.ts': 0.5 };
  const files = ['d.test.ts', 'c.test.ts', 'new.test.ts', 'a.test.ts', 'b.test.ts'];
  expect(longestFirst(files, durations)).toEqual([
    'new.test.ts',
    'b.test.ts',
    'a.test.ts',
    'c.test.ts',
    'd.test.ts',
  ]);
});

it('`npm test` uses that order, from a list of seconds per file', async () => {
  const { default: vitestConfig, FILE_DURATIONS } = await config();
  expect(vitestConfig.test?.sequence?.sequencer?.name).toBe('LongestFirst');
  const durations = JSON.parse(readFileSync(FILE_DURATIONS, 'utf8')) as Record<string, number>;
  expect(Object.keys(durations).length).toBeGreaterThan(100);
  for (const [file, seconds] of Object.entries(durations)) {
    expect(file).toMatch(/^test\/.+\.test\.ts$/);
    expect(seconds, file).toBeGreaterThanOrEqual(0);
  }
});
