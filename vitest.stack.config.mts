// `npm run test:stack`: the tests of the production stack (test/stack), each file on a native stack of its
// own (dev/stack: the Temporal server on Postgres, the standalone UI, worker processes), and the tests that
// need a tool built for them (Jaeger, for the trace viewer test). Slow, so apart from `npm test`; .ci/run runs
// both, and test/layout/testSuites.test.ts holds every test file to exactly one of the two.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/stack/**/*.test.ts'],
    pool: 'forks',
    // The Temporal runtime as the worker installs it: one JSON line per SDK entry, warnings and up.
    setupFiles: ['test/support/testRuntime.ts'],
    // One stack at a time: a server, its Postgres and three workers already fill a 2-core machine, and one
    // file restarts its Postgres on purpose.
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
