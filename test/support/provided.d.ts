// Values test/support/globalSetup.ts hands to test files through vitest's provide/inject, typed here so
// `inject('databaseUrl')` is a string rather than `never`.
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin connection string of the run's Postgres; test files create their own database on it. */
    databaseUrl: string;
    /** A database on it migrated once for the run, which openTestDatabase copies; '' when there is none. */
    migratedTemplate: string;
    temporalAddress: string;
    temporalNamespace: string;
    /** Path of the workflow bundle built once per run; '' while src/workflows/index.ts does not exist. */
    workflowBundlePath: string;
    /** An empty folder for the run, where the first file that needs `npm run build`'s output builds it once. */
    productBuildCache: string;
    /** A folder whose dist/ is src/ compiled once for the run (test/support/compiledProduct.ts). */
    compiledProduct: string;
  }
}
