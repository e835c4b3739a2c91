// The production topology of docker-compose.yml, run natively from the same values (deploy/stack.env):
// Postgres → Temporal's schema (temporal-sql-tool) → the app's migrations → the Temporal server (namespace,
// search attributes) → the standalone Web UI → the mail sandbox → N worker processes. Stops in reverse.
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Client, escapeIdentifier } from 'pg';
import { migrate } from '../../src/db/migrator';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../devtools/embeddedPostgres';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { setUpStackDatabaseRoles } from './stackRoles';
import { loadStackSettings, type StackSettings } from './stackSettings';
import type { ManagedProcess } from './managedProcess';
import { ensureStackTools } from './stackTools';
import {
  CLUSTER_HISTORY_SHARDS,
  DEFAULT_CLUSTER_SHAPE,
  startTemporalCluster,
  type ClusterShape,
  type RunningTemporalCluster,
} from './temporalCluster';
import { startTemporalServer, type RunningTemporalServer } from './temporalServer';
import { applyTemporalSchema } from './temporalSchema';
import { startUiServer, type RunningUiServer } from './uiServer';
import { startWorkerFleet, type StackWorkerConnections, type WorkerFleet } from './workerFleet';

/** Certificates for mTLS between every client and the server (made with openssl; see test/stack/mtls.test.ts). */
export interface StackTlsFiles {
  caCertFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  /** A DNS name in the server certificate's subjectAltName. */
  serverName: string;
}

export interface StackOptions {
  /** Configs, logs and (embedded) Postgres data. */
  directory: string;
  /** Worker processes; 0 starts none. Default 3. */
  workers?: number;
  /** An existing Postgres server (a URL whose user may create databases), instead of an embedded one. */
  postgresUrl?: string;
  /** Keep the embedded Postgres's data across runs (as a compose volume does). Default false. */
  keepData?: boolean;
  /** The app's database; default: settings.appDatabase on the stack's Postgres. */
  appDatabaseUrl?: string;
  tls?: StackTlsFiles;
  temporalPort?: number;
  /**
   * The Temporal server as a cluster of processes (dev/stack/temporalCluster.ts) instead of one: true for two
   * frontends, two history hosts, two matching hosts and the worker service. It has databases of its own
   * (<TEMPORAL_DB>_cluster), with CLUSTER_HISTORY_SHARDS shards. Not with `tls`.
   */
  cluster?: boolean | ClusterShape;
  /** null: no Web UI. Default: a free port. */
  uiPort?: number | null;
  /** Worker settings (e.g. SEND_ACTIVITY_TIMEOUT_MS) on top of the inherited environment. */
  workerEnv?: Record<string, string>;
  settings?: StackSettings;
  /** The single-process server with production's dynamic config only (TemporalServerOptions). Default false. */
  productionDynamicConfig?: boolean;
  /** Echo every child's output to stderr. */
  echo?: boolean;
  log?: (line: string) => void;
}

export interface RunningStack {
  settings: StackSettings;
  temporalAddress: string;
  namespace: string;
  temporalMetricsUrl: string;
  /** The cluster, when the stack runs one (StackOptions.cluster); null for the single-process server. */
  cluster: RunningTemporalCluster | null;
  uiUrl: string | null;
  /** The app's database (orders, order_mail_log), as its admin: for tests and tools; workers use `connections`. */
  databaseUrl: string;
  /** Temporal's Postgres server, as an admin URL. */
  postgresUrl: string;
  sandbox: MailSandbox;
  workers: WorkerFleet | null;
  /** What a worker or client needs to connect like the stack's own workers (TLS files included). */
  connections: StackWorkerConnections;
  /** Every process the stack started, for `npm run stack -- --down` and for logs. */
  processes(): { name: string; pid: number; logFile: string }[];
  /**
   * Stops and starts the embedded Postgres on the same port and data (Temporal's persistence with it);
   * `whileDown` runs while it is stopped.
   */
  restartPostgres(options?: { whileDown?: () => Promise<void> | void }): Promise<void>;
  stop(): Promise<void>;
}

const IP = '127.0.0.1';

export async function startStack(options: StackOptions): Promise<RunningStack> {
  const log = options.log ?? ((line: string) => console.log(`[stack] ${line}`));
  const settings = options.settings ?? loadStackSettings();
  await mkdir(options.directory, { recursive: true });
  // Run as root, embedded Postgres runs as a `postgres` user, which must reach its data folder in here
  // (mkdtemp makes folders only their owner can enter).
  await chmod(options.directory, 0o755);
  const tools = await ensureStackTools(settings, { log });
  const clusterShape =
    options.cluster === true
      ? DEFAULT_CLUSTER_SHAPE
      : options.cluster === false
        ? undefined
        : options.cluster;
  if (clusterShape !== undefined && options.tls !== undefined) {
    throw new Error('the cluster stack runs without TLS; the mTLS stack is the single-process server');
  }
  // numHistoryShards is fixed when Temporal's database is created: the cluster gets databases of its own.
  const temporalDatabases =
    clusterShape === undefined
      ? { temporal: settings.temporalDatabase, visibility: settings.temporalVisibilityDatabase }
      : {
          temporal: `${settings.temporalDatabase}_cluster`,
          visibility: `${settings.temporalVisibilityDatabase}_cluster`,
        };

  const stops: { name: string; stop: () => Promise<void> }[] = [];
  const stopAll = async (): Promise<void> => {
    // Reverse order of starting; every part is stopped even if one fails, so nothing outlives the stack.
    const failures: unknown[] = [];
    for (const { name, stop } of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (error) {
        failures.push(
          new Error(`stopping ${name}: ${error instanceof Error ? error.message : String(error)}`),
        );
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, 'the stack did not stop cleanly');
  };

  try {
    let embedded: EmbeddedPostgresServer | null = null;
    let postgresUrl = options.postgresUrl;
    if (postgresUrl === undefined) {
      embedded = await startEmbeddedPostgres({
        dataDir: path.join(options.directory, 'postgres'),
        persistent: options.keepData === true,
        // Seven server processes with a pool each, beside the workers' pools.
        ...(clusterShape === undefined ? {} : { maxConnections: 400 }),
      });
      stops.push({ name: 'postgres', stop: () => embedded?.stop() ?? Promise.resolve() });
      postgresUrl = embedded.connectionString;
    }
    log(`Postgres ${redact(postgresUrl)}`);

    await applyTemporalSchema({
      sqlTool: tools.sqlTool,
      schemaDirectory: tools.schemaDirectory,
      adminUrl: postgresUrl,
      temporalDatabase: temporalDatabases.temporal,
      visibilityDatabase: temporalDatabases.visibility,
      log,
    });

    const databaseUrl = options.appDatabaseUrl ?? (await ensureDatabase(postgresUrl, settings.appDatabase));
    // The compose file's one-shot `db-roles` and `migrate` jobs: the migrations as their own login, the
    // workers as a login of the worker role (they run no DDL). A database the caller brings keeps its roles.
    const roles =
      options.appDatabaseUrl === undefined
        ? await setUpStackDatabaseRoles(databaseUrl)
        : { migrationUrl: databaseUrl, workerUrl: databaseUrl };
    const migrated = await migrate(roles.migrationUrl);
    log(`App database ready (${migrated.applied.length} migration(s) applied)`);

    const tls = options.tls;
    let cluster: RunningTemporalCluster | null = null;
    let temporal: Pick<RunningTemporalServer, 'address' | 'metricsUrl'> & {
      processes: () => ManagedProcess[];
    };
    if (clusterShape !== undefined) {
      const started = await startTemporalCluster({
        serverBinary: tools.temporalServer,
        temporalCli: tools.temporalCli,
        directory: path.join(options.directory, 'temporal'),
        ip: IP,
        port: options.temporalPort,
        postgresUrl,
        temporalDatabase: temporalDatabases.temporal,
        visibilityDatabase: temporalDatabases.visibility,
        historyShards: CLUSTER_HISTORY_SHARDS,
        namespace: settings.namespace,
        namespaceRetention: settings.namespaceRetention,
        searchAttributes: settings.searchAttributes,
        shape: clusterShape,
        echo: options.echo,
        log,
      });
      cluster = started;
      stops.push({ name: 'temporal cluster', stop: () => started.stop() });
      temporal = {
        address: started.address,
        metricsUrl: started.hosts[0]!.metricsUrl,
        processes: () => started.processes(),
      };
    } else {
      const server: RunningTemporalServer = await startTemporalServer({
        serverBinary: tools.temporalServer,
        temporalCli: tools.temporalCli,
        directory: path.join(options.directory, 'temporal'),
        ip: IP,
        frontendPort: options.temporalPort,
        postgresUrl,
        temporalDatabase: settings.temporalDatabase,
        visibilityDatabase: settings.temporalVisibilityDatabase,
        historyShards: settings.historyShards,
        namespace: settings.namespace,
        namespaceRetention: settings.namespaceRetention,
        searchAttributes: settings.searchAttributes,
        tls,
        productionDynamicConfig: options.productionDynamicConfig,
        echo: options.echo,
        log,
      });
      stops.push({ name: 'temporal server', stop: () => server.stop() });
      temporal = { ...server, processes: () => [server.process] };
    }

    let ui: RunningUiServer | null = null;
    if (options.uiPort !== null) {
      ui = await startUiServer({
        uiBinary: tools.uiServer,
        directory: path.join(options.directory, 'ui'),
        ip: IP,
        port: options.uiPort,
        temporalAddress: temporal.address,
        namespace: settings.namespace,
        tls,
        echo: options.echo,
        log,
      });
      const running = ui;
      stops.push({ name: 'ui-server', stop: () => running.stop() });
    }

    const sandbox = await startMailSandbox();
    stops.push({ name: 'mail sandbox', stop: () => sandbox.close() });
    log(`Mail sandbox ${sandbox.url} (messages: ${sandbox.url}/_sandbox/messages)`);

    const connections: StackWorkerConnections = {
      databaseUrl: roles.workerUrl,
      temporalAddress: temporal.address,
      namespace: settings.namespace,
      mailApiBaseUrl: sandbox.url,
      mailApiKey: 'sandbox-key',
      ...(tls === undefined ? {} : { tls }),
    };
    let workers: WorkerFleet | null = null;
    const workerCount = options.workers ?? 3;
    if (workerCount > 0) {
      const workerDirectory = path.join(options.directory, 'workers');
      await mkdir(workerDirectory, { recursive: true });
      workers = await startWorkerFleet({
        count: workerCount,
        node: tools.node,
        directory: workerDirectory,
        ip: IP,
        connections,
        extraEnv: options.workerEnv,
        echo: options.echo,
        log,
      });
      const fleet = workers;
      stops.push({ name: 'workers', stop: () => fleet.stop() });
    }

    return {
      settings,
      temporalAddress: temporal.address,
      namespace: settings.namespace,
      temporalMetricsUrl: temporal.metricsUrl,
      cluster,
      uiUrl: ui?.url ?? null,
      databaseUrl,
      postgresUrl,
      sandbox,
      workers,
      connections,
      processes: () =>
        [
          ...temporal.processes(),
          ...(ui === null ? [] : [ui.process]),
          ...(workers?.workers.map((worker) => worker.process) ?? []),
        ].map(({ name, pid, logFile }) => ({ name, pid, logFile })),
      async restartPostgres(restartOptions) {
        if (embedded === null) throw new Error('restartPostgres: the stack runs on an external Postgres');
        await embedded.restart(restartOptions);
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<string> {
  const client = new Client({ connectionString: adminUrl, application_name: 'stack-setup' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    // CREATE DATABASE takes no parameters; the name comes from deploy/stack.env and is quoted.
    if ((rowCount ?? 0) === 0) await client.query(`CREATE DATABASE ${escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A URL without its password, for logs. */
export function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = '***';
  return parsed.toString();
}
