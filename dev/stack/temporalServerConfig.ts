// The Temporal server's static config for the native stack, derived from the server module's
// config/development-postgres12.yaml: the same keys, with every port free and the database taken from the
// stack. JSON is valid YAML, so the config is built as an object and written with JSON.stringify: no
// hand-made quoting of passwords or paths.

export interface TemporalServerPorts {
  frontendGrpc: number;
  frontendMembership: number;
  frontendHttp: number;
  historyGrpc: number;
  historyMembership: number;
  matchingGrpc: number;
  matchingMembership: number;
  workerGrpc: number;
  workerMembership: number;
  metrics: number;
}

export interface TemporalServerTls {
  caCertFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  /** A name in the server certificate; the server's own clients (its worker service) verify it. */
  serverName: string;
}

export interface TemporalServerConfigInput {
  ip: string;
  ports: TemporalServerPorts;
  postgres: { host: string; port: number; user: string; password: string };
  temporalDatabase: string;
  visibilityDatabase: string;
  historyShards: number;
  dynamicConfigFile: string;
  /** mTLS on the frontend and between the services; clients must present a certificate signed by the CA. */
  tls?: TemporalServerTls;
}

/** The ports of one service in one process: its gRPC port, its membership (ringpop) port, the frontend's HTTP port. */
export interface ServicePorts {
  grpcPort: number;
  membershipPort: number;
  httpPort?: number;
}

export type TemporalServiceName = 'frontend' | 'history' | 'matching' | 'worker';

/**
 * One host of a cluster (dev/stack/temporalCluster.ts): a process that runs one of the services, with ports of
 * its own. The hosts find each other through the cluster_membership table of the shared database and ringpop.
 */
export interface TemporalClusterHostConfigInput extends Omit<TemporalServerConfigInput, 'ports'> {
  /** The service this process runs, and its ports. */
  service: TemporalServiceName;
  ports: ServicePorts;
  /**
   * Every service's section, as another host of it has it. The server tracks a membership ring for each
   * service named in its config (a missing one fails the start: "service not tracked by Monitor"), and a
   * member advertises its own gRPC port in the ring, so these ports are only read as a fallback; the
   * frontend's HTTP port is read from here to reach a frontend's HTTP API.
   */
  otherServices: Record<TemporalServiceName, ServicePorts>;
  metricsPort: number;
  /** What clients use as the cluster's address (the frontends' balancer); the cluster metadata names it. */
  publicAddress: string;
  /** Connections to each database per process (a cluster has several processes on one Postgres). */
  maxConns?: { default: number; visibility: number };
}

export function renderTemporalServerConfig(input: TemporalServerConfigInput): string {
  const { ports } = input;
  return renderConfig({
    ...input,
    metricsPort: ports.metrics,
    publicAddress: `${input.ip}:${ports.frontendGrpc}`,
    services: {
      frontend: {
        grpcPort: ports.frontendGrpc,
        membershipPort: ports.frontendMembership,
        httpPort: ports.frontendHttp,
      },
      history: { grpcPort: ports.historyGrpc, membershipPort: ports.historyMembership },
      matching: { grpcPort: ports.matchingGrpc, membershipPort: ports.matchingMembership },
      worker: { grpcPort: ports.workerGrpc, membershipPort: ports.workerMembership },
    },
  });
}

/** The config of one host of a cluster: its own service's section carries the ports it binds. */
export function renderTemporalClusterHostConfig(input: TemporalClusterHostConfigInput): string {
  return renderConfig({ ...input, services: { ...input.otherServices, [input.service]: input.ports } });
}

function renderConfig(
  input: Omit<TemporalServerConfigInput, 'ports'> & {
    services: Partial<Record<TemporalServiceName, ServicePorts>>;
    metricsPort: number;
    publicAddress: string;
    maxConns?: { default: number; visibility: number };
  },
): string {
  const { ip } = input;
  const sql = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${input.postgres.host}:${input.postgres.port}`,
      connectProtocol: 'tcp',
      user: input.postgres.user,
      password: input.postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = ({ grpcPort, membershipPort, httpPort }: ServicePorts) => ({
    rpc: {
      grpcPort,
      membershipPort,
      bindOnIP: ip,
      ...(httpPort === undefined ? {} : { httpPort }),
    },
  });
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: input.historyShards,
      datastores: {
        'postgres-default': sql(input.temporalDatabase, input.maxConns?.default ?? 20),
        'postgres-visibility': sql(input.visibilityDatabase, input.maxConns?.visibility ?? 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: ip },
      // pprof stays off: port 0.
      pprof: { port: 0 },
      metrics: {
        prometheus: {
          framework: 'tally',
          timerType: 'histogram',
          listenAddress: `${ip}:${input.metricsPort}`,
        },
      },
      ...(input.tls === undefined ? {} : { tls: tlsSection(input.tls) }),
    },
    services: Object.fromEntries(
      Object.entries(input.services).map(([name, ports]) => [name, service(ports)]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: input.publicAddress,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

function tlsSection(tls: TemporalServerTls) {
  const server = {
    certFile: tls.serverCertFile,
    keyFile: tls.serverKeyFile,
    requireClientAuth: true,
    clientCaFiles: [tls.caCertFile],
  };
  const client = { serverName: tls.serverName, rootCaFiles: [tls.caCertFile] };
  // The services talk to each other (internode) and to the frontend (the worker service) with the same
  // certificate; the frontend requires one from every client, which is what the mTLS test checks.
  return { internode: { server, client }, frontend: { server, client } };
}
