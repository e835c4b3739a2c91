// One Postgres, one Temporal dev server and one workflow bundle per test run, shared by every test file
// (each file isolates itself with its own database and task queues). DATABASE_URL / TEMPORAL_ADDRESS point
// the run at servers that already exist instead.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { enableCompileCache, flushCompileCache } from 'node:module';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { Client, escapeIdentifier } from 'pg';
import type { TestProject } from 'vitest/node' with { 'resolution-mode': 'import' };
import { startTemporalDevServer } from '../../dev/devtools/devServer';
import { startEmbeddedPostgres } from '../../dev/devtools/embeddedPostgres';
import { createIsolatedDatabase } from '../../dev/devtools/testDatabases';
import { migrate } from '../../src/db/migrator';
import { grantServiceMembership } from '../../dev/devtools/serviceMembership';
import { devServerSearchAttributes } from '../../dev/devtools/searchAttributeFlags';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import {
  untracedBundlePathOf,
  WORKFLOW_INTERCEPTOR_MODULES,
} from '../../src/tracing/workflowInterceptorModules';
import { compileProduct } from './compiledProduct';
import { scratchRoot } from './scratch';

interface Started<T> {
  value: T;
  stop: () => Promise<void>;
}

const nothingToStop = async (): Promise<void> => undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const env = process.env;
  const compileCache = await provideCompileCache();
  // Started side by side: bundling is CPU-bound while the servers mostly wait.
  const results = await Promise.allSettled([
    timed('postgres', () => provideDatabase(env.DATABASE_URL)),
    timed('temporal', () => provideTemporal(env.TEMPORAL_ADDRESS, env.TEMPORAL_NAMESPACE ?? 'default')),
    timed('workflow bundle', () =>
      provideWorkflowBundle(join(project.config.root, 'src/workflows/index.ts')),
    ),
    provideBuildCache(),
    timed('compiled product', () => provideCompiledProduct(project.config.root)),
  ]);
  flushCompileCache();
  const stops = [
    ...results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.stop] : [])),
    compileCache.stop,
  ];
  const teardown = async (): Promise<void> => {
    // Every part is stopped even if one fails, so no server outlives the run.
    const outcomes = await Promise.allSettled(stops.map((stop) => stop()));
    const failures = rejections(outcomes);
    if (failures.length > 0) throw new AggregateError(failures, 'test teardown failed');
  };

  const [database, temporal, bundle, buildCache, compiled] = results;
  if (
    database.status === 'rejected' ||
    temporal.status === 'rejected' ||
    bundle.status === 'rejected' ||
    buildCache.status === 'rejected' ||
    compiled.status === 'rejected'
  ) {
    await teardown().catch(() => undefined);
    const failures = rejections(results);
    throw new AggregateError(failures, `test setup failed: ${failures.map(messageOf).join('; ')}`);
  }
  project.provide('databaseUrl', database.value.value.url);
  project.provide('migratedTemplate', database.value.value.migratedTemplate);
  project.provide('temporalAddress', temporal.value.value.address);
  project.provide('temporalNamespace', temporal.value.value.namespace);
  project.provide('workflowBundlePath', bundle.value.value);
  project.provide('productBuildCache', buildCache.value.value);
  project.provide('compiledProduct', compiled.value.value);
  return teardown;
}

async function provideDatabase(
  databaseUrl: string | undefined,
): Promise<Started<{ url: string; migratedTemplate: string }>> {
  if (databaseUrl !== undefined && databaseUrl !== '') {
    // The tests run this service as that login: a member of its worker group, as the embedded one is made.
    await grantServiceMembership(databaseUrl);
    const template = await migratedTemplate(databaseUrl);
    return { value: { url: databaseUrl, migratedTemplate: template.name }, stop: () => template.drop() };
  }
  // Its data on the memory file system when there is one: each file's database is an 8 MB copy of the template.
  const postgres = await startEmbeddedPostgres({
    dataDir: join(scratchRoot(), `test-postgres-${randomUUID()}`),
  });
  try {
    const template = await migratedTemplate(postgres.connectionString);
    return {
      value: { url: postgres.connectionString, migratedTemplate: template.name },
      stop: async () => {
        await template.drop();
        await postgres.stop();
      },
    };
  } catch (error) {
    await postgres.stop().catch(() => undefined);
    throw error;
  }
}

/**
 * A database migrated once for the run, which each test file's database copies (CREATE DATABASE ...
 * TEMPLATE): a copy takes a fraction of applying every migration again. Nothing stays connected to it.
 */
async function migratedTemplate(adminUrl: string): Promise<{ name: string; drop: () => Promise<void> }> {
  const template = await createIsolatedDatabase(adminUrl, 'test_template');
  const name = new URL(template.connectionString).pathname.slice(1);
  try {
    await migrate(template.connectionString);
    // Closed to connections, so no session can hold it (a copy fails while one does).
    const admin = new Client({ connectionString: adminUrl, application_name: 'test template' });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${escapeIdentifier(name)} WITH ALLOW_CONNECTIONS false`);
    } finally {
      await admin.end();
    }
  } catch (error) {
    await template.drop().catch(() => undefined);
    throw error;
  }
  return { name, drop: () => template.drop() };
}

async function provideTemporal(
  address: string | undefined,
  namespace: string,
): Promise<Started<{ address: string; namespace: string }>> {
  if (address !== undefined && address !== '') {
    const connection = await Connection.connect({ address });
    try {
      // The attributes the workflows upsert (src/shared/orderMailSearchAttributes.ts); an unregistered upsert hangs.
      await ensureSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
    return { value: { address, namespace }, stop: nothingToStop };
  }
  const server = await startTemporalDevServer({
    uiPort: null,
    namespace,
    searchAttributes: devServerSearchAttributes(),
    // Test-only: one partition per task queue, not the server's 4. Each test makes task queues of its own, and
    // every partition is loaded, leased and polled apart (docs/testing.md).
    dynamicConfig: {
      'matching.numTaskqueueReadPartitions': '1',
      'matching.numTaskqueueWritePartitions': '1',
    },
  });
  return { value: { address: server.address, namespace }, stop: () => server.stop() };
}

/**
 * Bundles the workflows once for the whole run; a worker per test file would otherwise spend seconds of
 * webpack each. Until the workflows exist the path is '' so the harness itself can be tested.
 */
async function provideWorkflowBundle(workflowsPath: string): Promise<Started<string>> {
  if (!existsSync(workflowsPath)) return { value: '', stop: nothingToStop };
  // Imported lazily: @temporalio/worker loads the native runtime, which runs without workflows need not pay.
  const { bundleWorkflowCode, DefaultLogger } = await import('@temporalio/worker');
  // As `npm run bundle-workflows` makes them (src/cli/bundle-workflows.ts): with the tracing interceptors, and
  // the twin without them beside it, which a worker with tracing off runs (prebuiltBundleToRun).
  const logger = new DefaultLogger('WARN');
  const [traced, untraced] = await Promise.all([
    bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger }),
    bundleWorkflowCode({ workflowsPath, logger }),
  ]);
  const directory = await mkdtemp(join(tmpdir(), 'workflow-bundle-'));
  const codePath = join(directory, 'workflows.js');
  await writeFile(codePath, traced.code);
  await writeFile(untracedBundlePathOf(codePath), untraced.code);
  return { value: codePath, stop: () => rm(directory, { recursive: true, force: true }) };
}

/**
 * A folder for `npm run build`'s output, built by the first file that needs it and copied by the others
 * (test/support/builtProduct.ts): nothing is built here, so a run of files that need none pays nothing.
 */
async function provideBuildCache(): Promise<Started<string>> {
  const directory = await mkdtemp(join(tmpdir(), 'product-build-cache-'));
  return { value: directory, stop: () => rm(directory, { recursive: true, force: true }) };
}

/** src/ compiled once for the run, for the tests that run the worker as a process of its own. */
async function provideCompiledProduct(root: string): Promise<Started<string>> {
  const compiled = await compileProduct(root);
  return { value: compiled.directory, stop: () => compiled.remove() };
}

/**
 * Node's on-disk compile cache for every Node process of the run: set before the forks start, so they and every
 * child they start (worker processes, npm, tsx programs, tsc) inherit it, and compile each module once for the
 * run instead of once per process. A folder per run, so a fresh clone's run costs what a warm one does.
 */
async function provideCompileCache(): Promise<Started<string>> {
  // One given from outside (a persistent folder, say) is used as it is.
  const given = process.env.NODE_COMPILE_CACHE;
  if (given !== undefined && given !== '') return { value: given, stop: nothingToStop };
  const directory = await mkdtemp(join(tmpdir(), 'node-compile-cache-'));
  process.env.NODE_COMPILE_CACHE = directory;
  // This process too: what it loads for the set-up (webpack, esbuild, the SDK) the forks load again. Written
  // out once the set-up is done (flushCompileCache below), before the forks start.
  enableCompileCache(directory);
  // A fork may still be writing its entries as it exits: rm tries again on ENOTEMPTY.
  return {
    value: directory,
    stop: () => rm(directory, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }),
  };
}

/** Prints how long each part took: on a slow CI machine, the first thing to look at. */
async function timed<T>(what: string, start: () => Promise<T>): Promise<T> {
  const startedAt = performance.now();
  const value = await start();
  console.log(`[global setup] ${what} ready in ${Math.round(performance.now() - startedAt)} ms`);
  return value;
}

function rejections(results: PromiseSettledResult<unknown>[]): unknown[] {
  return results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
}

function messageOf(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}
