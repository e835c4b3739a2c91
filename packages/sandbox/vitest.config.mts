// The package's own tests, alone: `npm test --workspace @order-confirmation-mail/sandbox`. The root `npm test`
// runs them too (vitest.config.mts includes packages/sandbox/test), beside the tests that use the sandbox.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
  },
});
