// The Temporal server of the native stack: a generated config (every port free), the go-installed binary,
// the namespace created with `temporal operator namespace create` as the compose file's job does, and the
// search attributes registered before any worker starts.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { SearchAttributeDefinitions } from '../devtools/searchAttributeFlags';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import { waitForTemporal } from '../devtools/waitForTemporal';
import { getFreePorts } from './freePorts';
import { startManagedProcess, type ManagedProcess } from './managedProcess';
import { DYNAMIC_CONFIG_PATH } from './stackSettings';
import {
  renderTemporalServerConfig,
  type TemporalServerPorts,
  type TemporalServerTls,
} from './temporalServerConfig';

export interface TemporalServerOptions {
  serverBinary: string;
  temporalCli: string;
  /** Config and log files go here. */
  directory: string;
  ip: string;
  /** The frontend's gRPC port; default: a free one. */
  frontendPort?: number;
  postgresUrl: string;
  temporalDatabase: string;
  visibilityDatabase: string;
  historyShards: number;
  namespace: string;
  namespaceRetention: string;
  searchAttributes: SearchAttributeDefinitions;
  tls?: TemporalServerTls & { clientCertFile: string; clientKeyFile: string };
  /**
   * Production's dynamic config only (deploy/temporal/dynamicconfig.yaml), without DEV_ONLY_DYNAMIC_CONFIG:
   * the bench measures the server as it would run, not with every read going to the database.
   */
  productionDynamicConfig?: boolean;
  echo?: boolean;
  log: (line: string) => void;
}

export interface RunningTemporalServer {
  address: string;
  /** The server's own Prometheus endpoint. */
  metricsUrl: string;
  process: ManagedProcess;
  /** What the stack's own clients pass to Connection.connect (TLS files read). */
  connectionOptions: ConnectionOptions;
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 120_000;
// Added to deploy/temporal/dynamicconfig.yaml for the native stack only: a search attribute registered a moment
// ago is seen by the next list query at once (the stack's tests search right after setup). Temporal's own
// docs call it a development setting: every read then goes to the database.
export const DEV_ONLY_DYNAMIC_CONFIG = `
# dev/stack only (not in production's file):
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
    constraints: {}
`;

// The server leaves its membership ring cleanly on SIGTERM within a few seconds.
export const STOP_GRACE_MS = 15_000;

export async function startTemporalServer(options: TemporalServerOptions): Promise<RunningTemporalServer> {
  const ports = await allocatePorts(options.ip, options.frontendPort);
  const postgres = new URL(options.postgresUrl);
  const configDirectory = path.join(options.directory, 'config');
  await mkdir(configDirectory, { recursive: true });
  const dynamicConfigFile = path.join(configDirectory, 'dynamicconfig.yaml');
  await writeFile(
    dynamicConfigFile,
    `${await readFile(DYNAMIC_CONFIG_PATH, 'utf8')}${options.productionDynamicConfig === true ? '' : DEV_ONLY_DYNAMIC_CONFIG}`,
  );
  await writeFile(
    path.join(configDirectory, 'development.yaml'),
    renderTemporalServerConfig({
      ip: options.ip,
      ports,
      postgres: {
        host: postgres.hostname,
        port: Number(postgres.port || '5432'),
        user: decodeURIComponent(postgres.username),
        password: decodeURIComponent(postgres.password),
      },
      temporalDatabase: options.temporalDatabase,
      visibilityDatabase: options.visibilityDatabase,
      historyShards: options.historyShards,
      dynamicConfigFile,
      tls: options.tls,
    }),
    { mode: 0o600 },
  );

  const address = `${options.ip}:${ports.frontendGrpc}`;
  const args = [
    '--root',
    options.directory,
    '--config',
    'config',
    '--env',
    'development',
    '--allow-no-auth',
    'start',
  ];
  const server = startManagedProcess({
    name: 'temporal server',
    command: options.serverBinary,
    args,
    logFile: path.join(options.directory, 'temporal-server.log'),
    echo: options.echo,
  });
  const connectionOptions: ConnectionOptions = { address, ...(await tlsConnectionOptions(options.tls)) };
  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    // The system namespace exists as soon as the frontend serves; `default` is created below.
    await waitForTemporal({
      address,
      namespace: 'temporal-system',
      deadline,
      hasFailed: () => server.exitDescription(),
      connectionOptions,
    });
    await createNamespace(options, address);
    await waitForTemporal({
      address,
      namespace: options.namespace,
      deadline,
      hasFailed: () => server.exitDescription(),
      connectionOptions,
    });
    await registerSearchAttributes(options, connectionOptions, deadline);
  } catch (error) {
    await server.stop({ graceMs: STOP_GRACE_MS });
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${reason}\ntemporal server output (${server.logFile}):\n${server.output()}`, {
      cause: error,
    });
  }
  options.log(`Temporal server ${address} (metrics http://${options.ip}:${ports.metrics}/metrics)`);
  return {
    address,
    metricsUrl: `http://${options.ip}:${ports.metrics}/metrics`,
    process: server,
    connectionOptions,
    stop: () => server.stop({ graceMs: STOP_GRACE_MS }),
  };
}

/**
 * Registers the search attributes, retrying while the server's services catch up: a namespace created a
 * moment ago is described by the frontend at once, but the operator API answers NOT_FOUND for it until the
 * namespace registry refreshes (up to 10 s).
 */
export async function registerSearchAttributes(
  options: Pick<TemporalServerOptions, 'namespace'>,
  connectionOptions: ConnectionOptions,
  deadline: number,
): Promise<void> {
  const connection = await Connection.connect(connectionOptions);
  try {
    for (;;) {
      try {
        // The canonical list (src/shared/orderMailSearchAttributes.ts); deploy/stack.env names the same ones for compose,
        // and test/stack/composeDrift.test.ts keeps the two equal.
        await ensureSearchAttributes(connection, options.namespace);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(500);
      }
    }
  } finally {
    await connection.close();
  }
}

/** `temporal operator namespace create`, unless it exists (a stack restarted on kept data). */
export async function createNamespace(
  options: Pick<TemporalServerOptions, 'temporalCli' | 'tls' | 'namespace' | 'namespaceRetention' | 'log'>,
  address: string,
): Promise<void> {
  const connectionFlags = [
    '--address',
    address,
    ...(options.tls === undefined
      ? []
      : [
          '--tls-cert-path',
          options.tls.clientCertFile,
          '--tls-key-path',
          options.tls.clientKeyFile,
          '--tls-ca-path',
          options.tls.caCertFile,
          '--tls-server-name',
          options.tls.serverName,
        ]),
  ];
  const cli = promisify(execFile);
  // The CLI reads TEMPORAL_* itself; only the flags above may say where to connect.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TEMPORAL_')));
  try {
    await cli(
      options.temporalCli,
      ['operator', 'namespace', 'describe', '-n', options.namespace, ...connectionFlags],
      { env },
    );
    return;
  } catch {
    // Not there yet: create it.
  }
  try {
    await cli(
      options.temporalCli,
      [
        'operator',
        'namespace',
        'create',
        '-n',
        options.namespace,
        '--retention',
        options.namespaceRetention,
        ...connectionFlags,
      ],
      { env },
    );
    options.log(`Namespace ${options.namespace} created (retention ${options.namespaceRetention})`);
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(
      `temporal operator namespace create failed: ${output.stdout ?? ''}${output.stderr ?? ''}`,
      {
        cause: error,
      },
    );
  }
}

export async function tlsConnectionOptions(
  tls: TemporalServerOptions['tls'],
): Promise<Partial<ConnectionOptions>> {
  if (tls === undefined) return {};
  return {
    tls: {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: await readFile(tls.caCertFile),
      clientCertPair: { crt: await readFile(tls.clientCertFile), key: await readFile(tls.clientKeyFile) },
    },
  };
}

async function allocatePorts(ip: string, frontendPort: number | undefined): Promise<TemporalServerPorts> {
  const [frontendGrpc = 0, ...others] = await getFreePorts(10, ip, { below: 32_768 });
  const [
    frontendMembership = 0,
    frontendHttp = 0,
    historyGrpc = 0,
    historyMembership = 0,
    matchingGrpc = 0,
    matchingMembership = 0,
    workerGrpc = 0,
    workerMembership = 0,
    metrics = 0,
  ] = others;
  return {
    frontendGrpc: frontendPort ?? frontendGrpc,
    frontendMembership,
    frontendHttp,
    historyGrpc,
    historyMembership,
    matchingGrpc,
    matchingMembership,
    workerGrpc,
    workerMembership,
    metrics,
  };
}
