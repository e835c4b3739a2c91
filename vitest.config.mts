import { configDefaults, defineConfig } from 'vitest/config';

// Files that replace a module (vi.mock): the module graph they load stays in their process's cache, so they run
// in a process of their own.
const OWN_PROCESS = ['test/workflows/stepTableBounds.test.ts'];

export default defineConfig({
  test: {
    // Temporal's native core (workers, NativeConnection) does not work inside worker threads.
    pool: 'forks',
    // The Temporal runtime as the worker installs it: one JSON line per SDK entry, warnings and up.
    setupFiles: ['test/support/testRuntime.ts'],
    // CI has 2 cores, shared with the dev server and Postgres; most files wait on timers and runs, so with
    // forks shared (below) four at a time still left the cores ~20% idle, and five fill them (docs/testing.md).
    maxWorkers: 5,
    // Tests wait on real servers and real workflow runs; a slow CI machine needs the headroom.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        test: {
          name: 'shared',
          // The sandbox package's own tests run here too: it is the oracle behind the rest.
          include: ['test/**/*.test.ts', 'packages/sandbox/test/**/*.test.ts'],
          // The production stack's tests start their own Temporal server on Postgres, and the trace viewer
          // test needs a Jaeger built from source: `npm run test:stack` (vitest.stack.config.mts).
          exclude: [...configDefaults.exclude, 'test/stack/**', ...OWN_PROCESS],
          // Files share their fork and its loaded modules: a fresh fork per file cost each of the 211 about
          // half a second of CPU before its setup file ran. Each file still gets its own database and queues.
          isolate: false,
          globalSetup: ['test/support/globalSetup.ts'],
        },
      },
      // Needs no server: no global setup of its own.
      { test: { name: 'own process', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
