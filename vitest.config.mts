import { configDefaults, defineConfig } from 'vitest/config';

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
    // Tests wait on real servers and real workflow runs; a slow CI machine needs the headroom.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
