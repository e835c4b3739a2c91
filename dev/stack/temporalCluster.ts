// The Temporal server as a cluster on one machine: each service in a process of its own (`temporal-server
// start --service <name>`) with its own gRPC, membership and metrics ports on loopback, all on the same
// Postgres persistence and visibility. The hosts find each other through the cluster_membership table and
// ringpop; the history hosts share the history shards between them and take over a dead host's shards.
// Clients (workers, the Web UI, the CLI) use one address: a TCP balancer in front of the frontends.
//
// Besides starting and stopping, the cluster kills (SIGKILL), restarts (SIGTERM, then start) and rolls its
// hosts one by one, for the cluster chaos profile (dev/demo/clusterChaos.ts), and reports which history host
// owns how many shards (each history host's numshards_gauge metric).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@temporalio/client';
import { Client } from 'pg';
import type { SearchAttributeDefinitions } from '../devtools/searchAttributeFlags';
import { waitForTemporal } from '../devtools/waitForTemporal';
import { getFreePorts } from './freePorts';
import { startFrontendBalancer, type FrontendBalancer } from './frontendBalancer';
import { startManagedProcess, type ManagedProcess } from './managedProcess';
import { DYNAMIC_CONFIG_PATH } from './stackSettings';
import {
  createNamespace,
  DEV_ONLY_DYNAMIC_CONFIG,
  registerSearchAttributes,
  STOP_GRACE_MS,
} from './temporalServer';
import {
  renderTemporalClusterHostConfig,
  type ServicePorts,
  type TemporalServiceName,
} from './temporalServerConfig';

export interface ClusterShape {
  frontends: number;
  history: number;
  matching: number;
  worker: number;
}

/** Two frontends, two history hosts, two matching hosts, the internal worker service. */
export const DEFAULT_CLUSTER_SHAPE: ClusterShape = { frontends: 2, history: 2, matching: 2, worker: 1 };

/**
 * Shards of the cluster's own databases. numHistoryShards is fixed when the database is created, so the
 * cluster does not share Temporal's databases with the single server (4 shards, deploy/stack.env); with 16, each
 * history host of two owns several and a dead host's share is worth moving.
 */
export const CLUSTER_HISTORY_SHARDS = 16;

export interface TemporalClusterOptions {
  serverBinary: string;
  temporalCli: string;
  directory: string;
  ip: string;
  /** The balancer's port (the cluster's address); default: a free one. */
  port?: number;
  postgresUrl: string;
  temporalDatabase: string;
  visibilityDatabase: string;
  historyShards: number;
  namespace: string;
  namespaceRetention: string;
  searchAttributes: SearchAttributeDefinitions;
  shape?: ClusterShape;
  echo?: boolean;
  log: (line: string) => void;
}

export interface ClusterHost {
  /** frontend-1, history-2, … */
  name: string;
  service: TemporalServiceName;
  /** Its own gRPC address (the frontends' are what the balancer forwards to). */
  grpcAddress: string;
  metricsUrl: string;
  logFile: string;
  /** The running process (a new one after each restart). */
  process(): ManagedProcess;
}

export interface RunningTemporalCluster {
  /** The balancer: what workers, clients and the Web UI connect to. */
  address: string;
  frontendAddresses: string[];
  hosts: ClusterHost[];
  historyShards: number;
  connectionOptions: ConnectionOptions;
  /** SIGKILL: the host dies without leaving the membership ring; the others notice and take over. */
  kill(name: string): Promise<void>;
  /** Starts a host that is down again, on its ports, and waits until it serves. */
  start(name: string): Promise<void>;
  /** SIGTERM (the host leaves the ring), then start. */
  restart(name: string): Promise<void>;
  /** Every host restarted, one after the other, each serving before the next goes: a rolling upgrade. */
  rollingRestart(onHost?: (name: string) => void): Promise<void>;
  /** All hosts stopped, then all started: the whole cluster down for a moment. */
  restartAll(): Promise<void>;
  /** Shards each history host owns now, by host name (its numshards_gauge; 0 when it is down). */
  shardOwnership(): Promise<Record<string, number>>;
  /** The hosts in the cluster_membership table that heartbeat within the last 20 s, by role. */
  membership(): Promise<Record<TemporalServiceName, string[]>>;
  processes(): ManagedProcess[];
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 180_000;
const HOST_READY_TIMEOUT_MS = 120_000;
const RESTART_RETRY_MS = 1_000;

// Each process has its own pool on the one Postgres: the history hosts do most of the writes.
const MAX_CONNS: Record<TemporalServiceName, { default: number; visibility: number }> = {
  frontend: { default: 8, visibility: 4 },
  history: { default: 16, visibility: 6 },
  matching: { default: 8, visibility: 2 },
  worker: { default: 4, visibility: 2 },
};

const ROLE_NAMES: Record<number, TemporalServiceName> = {
  1: 'frontend',
  2: 'history',
  3: 'matching',
  4: 'worker',
};

interface HostPlan {
  name: string;
  service: TemporalServiceName;
  ports: ServicePorts;
  metricsPort: number;
  directory: string;
}

export async function startTemporalCluster(options: TemporalClusterOptions): Promise<RunningTemporalCluster> {
  const shape = options.shape ?? DEFAULT_CLUSTER_SHAPE;
  const ip = options.ip;
  const plans: HostPlan[] = [];
  const add = (service: TemporalServiceName, count: number, prefix: string) => {
    for (let index = 1; index <= count; index++) {
      plans.push({
        name: `${prefix}-${index}`,
        service,
        ports: { grpcPort: 0, membershipPort: 0 },
        metricsPort: 0,
        directory: path.join(options.directory, `${prefix}-${index}`),
      });
    }
  };
  add('frontend', shape.frontends, 'frontend');
  add('history', shape.history, 'history');
  add('matching', shape.matching, 'matching');
  add('worker', shape.worker, 'worker');
  if (shape.frontends < 1 || shape.history < 1 || shape.matching < 1 || shape.worker < 1) {
    throw new Error('a cluster needs at least one host of each service');
  }

  // Below 32768: the server keeps its membership port in a smallint column (cluster_membership.rpc_port).
  const free = await getFreePorts(plans.length * 3 + 2, ip, { below: 32_768 });
  const take = (): number => free.shift() ?? 0;
  const balancerPort = options.port ?? take();
  for (const plan of plans) {
    plan.ports = {
      grpcPort: take(),
      membershipPort: take(),
      ...(plan.service === 'frontend' ? { httpPort: take() } : {}),
    };
    plan.metricsPort = take();
  }
  const frontendPlans = plans.filter((plan) => plan.service === 'frontend');
  const frontendAddresses = frontendPlans.map((plan) => `${ip}:${plan.ports.grpcPort}`);
  const address = `${ip}:${balancerPort}`;

  const firstOfEach = Object.fromEntries(
    (['frontend', 'history', 'matching', 'worker'] as const).map((service) => [
      service,
      plans.find((plan) => plan.service === service)!.ports,
    ]),
  ) as Record<TemporalServiceName, ServicePorts>;
  await mkdir(options.directory, { recursive: true });
  const dynamicConfigFile = path.join(options.directory, 'dynamicconfig.yaml');
  await writeFile(
    dynamicConfigFile,
    `${await readFile(DYNAMIC_CONFIG_PATH, 'utf8')}${DEV_ONLY_DYNAMIC_CONFIG}`,
  );
  const postgres = new URL(options.postgresUrl);
  for (const plan of plans) {
    await mkdir(path.join(plan.directory, 'config'), { recursive: true });
    await writeFile(
      path.join(plan.directory, 'config', 'development.yaml'),
      renderTemporalClusterHostConfig({
        ip,
        service: plan.service,
        ports: plan.ports,
        otherServices: firstOfEach,
        metricsPort: plan.metricsPort,
        publicAddress: address,
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
        maxConns: MAX_CONNS[plan.service],
      }),
      { mode: 0o600 },
    );
  }

  const running = new Map<string, ManagedProcess>();
  const launch = (plan: HostPlan): ManagedProcess => {
    const child = startManagedProcess({
      name: `temporal ${plan.name}`,
      command: options.serverBinary,
      args: [
        '--root',
        plan.directory,
        '--config',
        'config',
        '--env',
        'development',
        '--allow-no-auth',
        'start',
        '--service',
        plan.service,
      ],
      logFile: path.join(options.directory, `${plan.name}.log`),
      echo: options.echo,
    });
    running.set(plan.name, child);
    return child;
  };
  const planOf = (name: string): HostPlan => {
    const plan = plans.find((candidate) => candidate.name === name);
    if (plan === undefined) throw new Error(`no cluster host ${name}`);
    return plan;
  };

  const connectionOptions: ConnectionOptions = { address };
  const metricsUrl = (plan: HostPlan) => `http://${ip}:${plan.metricsPort}/metrics`;
  const shardsOf = async (plan: HostPlan): Promise<number> => {
    try {
      const response = await fetch(metricsUrl(plan), { signal: AbortSignal.timeout(3_000) });
      return numShardsFromMetrics(await response.text());
    } catch {
      return 0;
    }
  };

  /** Serving: a frontend answers for the namespace; history owns shards; matching listens; the worker joined. */
  const waitReady = async (plan: HostPlan, namespace: string, deadline: number): Promise<void> => {
    const child = running.get(plan.name);
    const failed = (): string | null =>
      child === undefined ? `${plan.name} is not started` : child.exitDescription();
    if (plan.service === 'frontend') {
      await waitForTemporal({
        address: `${ip}:${plan.ports.grpcPort}`,
        namespace,
        deadline,
        hasFailed: failed,
      });
      return;
    }
    for (;;) {
      const failure = failed();
      if (failure !== null) throw new Error(failure);
      // The worker service serves no gRPC; it is in the cluster once its membership port answers.
      const ready =
        plan.service === 'history'
          ? (await shardsOf(plan)) > 0
          : await canConnect(ip, plan.service === 'worker' ? plan.ports.membershipPort : plan.ports.grpcPort);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`${plan.name} did not serve in time`);
      await sleep(250);
    }
  };

  let balancer: FrontendBalancer | null = null;
  let namespaceReady = false;
  const stopHost = async (plan: HostPlan, signal: NodeJS.Signals): Promise<void> => {
    const child = running.get(plan.name);
    if (child === undefined) return;
    await child.stop({ graceMs: STOP_GRACE_MS, signal });
  };
  /**
   * Starts a host, again and again while it exits before it serves: Postgres is restarting, or (on a new
   * database) another host is writing the cluster's metadata at the same moment, which makes all but one exit.
   */
  const startHost = async (plan: HostPlan, deadline = Date.now() + HOST_READY_TIMEOUT_MS): Promise<void> => {
    for (;;) {
      const child = launch(plan);
      try {
        await waitReady(plan, namespaceReady ? options.namespace : 'temporal-system', deadline);
        return;
      } catch (error) {
        if (Date.now() > deadline) {
          await child.stop({ graceMs: 5_000 });
          const reason = error instanceof Error ? error.message : String(error);
          throw new Error(`${reason}\n${plan.name} output (${child.logFile}):\n${child.output()}`, {
            cause: error,
          });
        }
        if (child.exitDescription() === null) await child.stop({ graceMs: 5_000 });
        await sleep(RESTART_RETRY_MS);
      }
    }
  };

  const stopAll = async (): Promise<void> => {
    await balancer?.close();
    // The services leave the ring cleanly; order matters little, frontends first stop new work coming in.
    await Promise.all(plans.map((plan) => stopHost(plan, 'SIGTERM')));
  };

  try {
    balancer = await startFrontendBalancer({ ip, port: balancerPort, frontends: frontendAddresses });
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    await Promise.all(plans.map((plan) => startHost(plan, deadline)));
    await createNamespace(
      {
        temporalCli: options.temporalCli,
        namespace: options.namespace,
        namespaceRetention: options.namespaceRetention,
        log: options.log,
      },
      address,
    );
    namespaceReady = true;
    await waitForTemporal({ address, namespace: options.namespace, deadline });
    await registerSearchAttributes({ namespace: options.namespace }, connectionOptions, deadline);
    // Each frontend serving the namespace (a frontend's namespace registry refreshes on its own).
    for (const plan of frontendPlans) await waitReady(plan, options.namespace, deadline);
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }

  const hosts: ClusterHost[] = plans.map((plan) => ({
    name: plan.name,
    service: plan.service,
    grpcAddress: `${ip}:${plan.ports.grpcPort}`,
    metricsUrl: metricsUrl(plan),
    logFile: path.join(options.directory, `${plan.name}.log`),
    process: () => running.get(plan.name)!,
  }));
  const cluster: RunningTemporalCluster = {
    address,
    frontendAddresses,
    hosts,
    historyShards: options.historyShards,
    connectionOptions,
    async kill(name) {
      await stopHost(planOf(name), 'SIGKILL');
    },
    async start(name) {
      await startHost(planOf(name));
    },
    async restart(name) {
      const plan = planOf(name);
      await stopHost(plan, 'SIGTERM');
      await startHost(plan);
    },
    async rollingRestart(onHost) {
      // The order of a rolling upgrade: history, matching, frontends, then the worker service.
      const order: TemporalServiceName[] = ['history', 'matching', 'frontend', 'worker'];
      for (const service of order) {
        for (const plan of plans.filter((candidate) => candidate.service === service)) {
          await cluster.restart(plan.name);
          onHost?.(plan.name);
        }
      }
    },
    async restartAll() {
      await Promise.all(plans.map((plan) => stopHost(plan, 'SIGTERM')));
      await Promise.all(plans.map((plan) => startHost(plan)));
    },
    async shardOwnership() {
      const owned: Record<string, number> = {};
      for (const plan of plans.filter((candidate) => candidate.service === 'history')) {
        owned[plan.name] = running.get(plan.name)?.exitDescription() === null ? await shardsOf(plan) : 0;
      }
      return owned;
    },
    async membership() {
      return readMembership(options.postgresUrl, options.temporalDatabase);
    },
    processes: () => plans.map((plan) => running.get(plan.name)!).filter(Boolean),
    stop: stopAll,
  };
  options.log(
    `Temporal cluster ${address} (${plans.map((plan) => plan.name).join(', ')}; ${options.historyShards} shards)`,
  );
  return cluster;
}

/** The numshards_gauge of a history host's Prometheus page: how many shards it owns (lingering ones included). */
export function numShardsFromMetrics(text: string): number {
  let shards = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('numshards_gauge')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) shards = Math.max(shards, value);
  }
  return shards;
}

async function readMembership(
  postgresUrl: string,
  database: string,
): Promise<Record<TemporalServiceName, string[]>> {
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  const client = new Client({ connectionString: url.toString(), application_name: 'stack-cluster' });
  await client.connect();
  try {
    const { rows } = await client.query<{ role: number; host: string }>(
      `SELECT role, rpc_address || ':' || rpc_port AS host FROM cluster_membership
        WHERE last_heartbeat > now() AT TIME ZONE 'UTC' - interval '20 seconds' ORDER BY host`,
    );
    const roles: Record<TemporalServiceName, string[]> = {
      frontend: [],
      history: [],
      matching: [],
      worker: [],
    };
    for (const row of rows) {
      const role = ROLE_NAMES[row.role];
      if (role !== undefined && !roles[role].includes(row.host)) roles[role].push(row.host);
    }
    return roles;
  } finally {
    await client.end();
  }
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
