import { readFileSync } from 'node:fs';
import path from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds per test file (path from the repository root), as a full run measured them. */
export const FILE_DURATIONS = path.join(import.meta.dirname, 'test', 'fileDurations.json');

/**
 * The order files start in: any missing from the list first (a new file may be long), then longest first;
 * ties by path, so the order is the same on every machine.
 */
export function longestFirst(files: readonly string[], durations: Record<string, number>): string[] {
  const seconds = (file: string) => durations[file] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => {
    const [sa, sb] = [seconds(a), seconds(b)];
    return sa !== sb ? (sb > sa ? 1 : -1) : a < b ? -1 : a > b ? 1 : 0;
  });
}

// Longest first, so no long file starts near the end and leaves one fork working alone. vitest's own order
// comes from its cache of an earlier run on the same machine; a fresh clone (CI) has none, and it falls back
// to file size, which put 30-s files among the last to start.
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const durations = JSON.parse(readFileSync(FILE_DURATIONS, 'utf8')) as Record<string, number>;
    const { root } = this.ctx.config;
    const byPath = new Map(
      files.map((spec) => [path.relative(root, spec.moduleId).split(path.sep).join('/'), spec]),
    );
    return longestFirst([...byPath.keys()], durations).map((file) => byPath.get(file)!);
  }
}

export default defineConfig({
  test: {
    // The sandbox package's own tests run here too: it is the oracle behind the rest.
    include: ['test/**/*.test.ts', 'packages/sandbox/test/**/*.test.ts'],
    // The production stack's tests start their own Temporal server on Postgres, and the trace viewer test
    // needs a Jaeger built from source: `npm run test:stack` (vitest.stack.config.mts).
    exclude: [...configDefaults.exclude, 'test/stack/**'],
    // Temporal's native core (workers, NativeConnection) does not work inside worker threads.
    pool: 'forks',
    // The Temporal runtime as the worker installs it: one JSON line per SDK entry, warnings and up.
    setupFiles: ['test/support/testRuntime.ts'],
    // CI has 2 cores, shared with the dev server and Postgres; most files wait on timers and runs (a file
    // uses 10-15% of a core), so three at a time keep the cores busier without starving the servers.
    maxWorkers: 3,
    globalSetup: ['test/support/globalSetup.ts'],
    sequence: { sequencer: LongestFirst },
    // Tests wait on real servers and real workflow runs; a slow CI machine needs the headroom.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
