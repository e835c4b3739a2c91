// ESLint flat config. The workflow guard mirrors temporalio/samples-typescript: workflow code runs in a
// deterministic sandbox and must not reach I/O, the clock, the environment or activity implementations.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// One list to scan, not one name per line.
// prettier-ignore
const nodeBuiltins = [
  'assert',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'readline',
  'stream',
  'timers',
  'tls',
  'url',
  'util',
  'v8',
  'vm',
  'worker_threads',
  'zlib',
];

// The SDK's internals (`@temporalio/common/lib/...`) change without notice between minor versions; only the
// packages' entry points are its API.
const sdkInternals = {
  group: ['@temporalio/*/lib', '@temporalio/*/lib/**'],
  message: "Import from the package's entry point: lib/ is the Temporal SDK's internals.",
};

// An Error thrown in workflow code fails the workflow *task*, which Temporal retries forever; a run that must
// end fails with an ApplicationFailure (docs/design.md §6). Rethrowing what was caught stays allowed.
const workflowThrows = {
  selector:
    'ThrowStatement > :matches(NewExpression, CallExpression)[callee.name=/^(Aggregate|Eval|Range|Reference|Syntax|Type|URI)?Error$/]',
  message:
    'Workflow code throws ApplicationFailures only: an Error fails the workflow task, retried forever.',
};

// The src/shared modules the workflows import (test/layout/workflowThrows.test.ts keeps this list whole).
// prettier-ignore
const sharedInWorkflows = [
  'endingTexts', 'failures', 'mailOutcome', 'orderId', 'orderMailSearchAttributes', 'sendOutcome',
  'unknownOutcome', 'unknownOutcomeFacts', 'workflowContract', 'workflowSettings',
].map((name) => `src/shared/${name}.ts`);

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'packages/*/dist/**',
      'coverage/**',
      'test-artifacts/**',
      '.tmp/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      'no-restricted-imports': ['error', { patterns: [sdkInternals] }],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.flatMap((name) => [name, `node:${name}`]),
            'pg',
            'undici',
            '@temporalio/activity',
            '@temporalio/client',
            '@temporalio/worker',
          ],
          patterns: [
            sdkInternals,
            {
              group: ['**/db', '**/db/**', '**/mail', '**/mail/**', '**/config', '**/config/**'],
              message: 'Workflows must stay deterministic: no I/O or configuration imports.',
            },
            {
              group: ['**/activities', '**/activities/**'],
              allowTypeImports: true,
              message: 'Workflows may import activity types only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/workflows/**/*.ts', ...sharedInWorkflows],
    rules: { 'no-restricted-syntax': ['error', workflowThrows] },
  },
  {
    // The client library and what it imports ship as @order-confirmation-mail/client (packages/client),
    // which the order service installs: no workflow code, no worker, no database or mail code in it.
    files: [
      'src/client.ts',
      'src/shared/workflowContract.ts',
      'src/shared/orderId.ts',
      'src/shared/orderMailSearchAttributes.ts',
      'src/config/temporalConnection.ts',
      'src/config/connectionTargets.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['@temporalio/workflow', '@temporalio/worker', '@temporalio/activity', 'pg', 'undici'],
          patterns: [
            sdkInternals,
            {
              group: [
                '**/workflows',
                '**/workflows/**',
                '**/worker',
                '**/activities/**',
                '**/db/**',
                '**/mail/**',
              ],
              message: 'The client package carries no workflow, worker, database or mail code.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
