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
  logLevel: string;
  /** mTLS on the frontend and between the services; clients must present a certificate signed by the CA. */
  tls?: TemporalServerTls;
}

export function renderTemporalServerConfig(input: TemporalServerConfigInput): string {
  const { ip, ports } = input;
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
  const service = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: {
      grpcPort,
      membershipPort,
      bindOnIP: ip,
      ...(httpPort === undefined ? {} : { httpPort }),
    },
  });
  const config = {
    log: { stdout: true, level: input.logLevel },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: input.historyShards,
      datastores: {
        'postgres-default': sql(input.temporalDatabase, 20),
        'postgres-visibility': sql(input.visibilityDatabase, 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: ip },
      // pprof stays off: port 0.
      pprof: { port: 0 },
      metrics: {
        prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `${ip}:${ports.metrics}` },
      },
      ...(input.tls === undefined ? {} : { tls: tlsSection(input.tls) }),
    },
    services: {
      frontend: service(ports.frontendGrpc, ports.frontendMembership, ports.frontendHttp),
      history: service(ports.historyGrpc, ports.historyMembership),
      matching: service(ports.matchingGrpc, ports.matchingMembership),
      worker: service(ports.workerGrpc, ports.workerMembership),
    },
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
          rpcAddress: `${ip}:${ports.frontendGrpc}`,
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
