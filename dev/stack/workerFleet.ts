// N worker processes of the native stack, each `node --import tsx src/worker.ts` (the source of what
// `npm start` runs compiled) on the pinned Node that the worker image has too, each with its own HTTP port for
// /metrics, /healthz and /readyz; the stack waits until every one is ready.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultDeploymentIdOf } from '../../src/config/loadConfig';
import { getFreePorts } from './freePorts';
import { startManagedProcess, type ManagedProcess } from './managedProcess';
import { PROJECT_ROOT } from './stackSettings';

/** How the stack reaches Temporal, the app's database and the mail API; docker-compose.yml sets the same names. */
export interface StackWorkerConnections {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  mailApiBaseUrl: string;
  mailApiKey: string;
  /** mTLS client files (envconfig's TEMPORAL_TLS_* variables). */
  tls?: { caCertFile: string; clientCertFile: string; clientKeyFile: string; serverName: string };
}

/**
 * The environment a stack worker gets on top of the stack's own. The compose file's `worker` service sets
 * the same variable names (test/stack/composeDrift.test.ts), so the two topologies configure workers alike.
 */
export function stackWorkerEnvironment(
  connections: StackWorkerConnections,
  httpBindAddress: string,
): Record<string, string> {
  return {
    DATABASE_URL: connections.databaseUrl,
    TEMPORAL_ADDRESS: connections.temporalAddress,
    TEMPORAL_NAMESPACE: connections.namespace,
    // The deployment's name in send keys: the stack's namespace, as it was before it had to be set.
    MAIL_DEPLOYMENT_ID: defaultDeploymentIdOf(connections.namespace),
    MAIL_API_BASE_URL: connections.mailApiBaseUrl,
    MAIL_API_KEY: connections.mailApiKey,
    WORKER_HTTP_BIND_ADDRESS: httpBindAddress,
    ...(connections.tls === undefined
      ? {}
      : {
          TEMPORAL_TLS_SERVER_CA_CERT_PATH: connections.tls.caCertFile,
          TEMPORAL_TLS_CLIENT_CERT_PATH: connections.tls.clientCertFile,
          TEMPORAL_TLS_CLIENT_KEY_PATH: connections.tls.clientKeyFile,
          TEMPORAL_TLS_SERVER_NAME: connections.tls.serverName,
        }),
  };
}

export interface StackWorker {
  index: number;
  /** http://ip:port: /metrics, /healthz, /readyz */
  httpUrl: string;
  process: ManagedProcess;
}

export interface WorkerFleetOptions {
  count: number;
  /** The Node binary the workers run on: the pinned one (StackTools.node), as in the worker image. */
  node: string;
  directory: string;
  ip: string;
  connections: StackWorkerConnections;
  /** Worker settings on top of the inherited environment (e.g. SEND_ACTIVITY_TIMEOUT_MS). */
  extraEnv?: Record<string, string>;
  echo?: boolean;
  log: (line: string) => void;
}

export interface WorkerFleet {
  workers: StackWorker[];
  /** Starts one more worker (a replacement, or a scale-up). */
  add(): Promise<StackWorker>;
  /** SIGTERM, then waits while running sends drain (the worker's shutdown grace), then SIGKILL. */
  stop(): Promise<void>;
}

// A worker bundles the workflow code with webpack at start; on a busy 2-core machine that takes a while.
const STARTUP_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 90_000;

export async function startWorkerFleet(options: WorkerFleetOptions): Promise<WorkerFleet> {
  const workers: StackWorker[] = [];
  const add = async (): Promise<StackWorker> => {
    const index = workers.length + 1;
    const [port = 0] = await getFreePorts(1, options.ip);
    const httpUrl = `http://${options.ip}:${port}`;
    const child = startManagedProcess({
      name: `worker ${index}`,
      command: options.node,
      // node --import tsx (not the tsx CLI): the CLI would run the worker in a child of its own, which a
      // signal to this process would not reach.
      args: ['--import', 'tsx', path.join('src', 'worker.ts')],
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        ...options.extraEnv,
        ...stackWorkerEnvironment(options.connections, `${options.ip}:${port}`),
      },
      logFile: path.join(options.directory, `worker-${index}.log`),
      echo: options.echo,
    });
    const worker = { index, httpUrl, process: child };
    workers.push(worker);
    return worker;
  };
  for (let index = 0; index < options.count; index++) await add();
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  try {
    await Promise.all(workers.map((worker) => waitUntilReady(worker, deadline)));
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.process.stop({ graceMs: 5_000 })));
    throw error;
  }
  options.log(`${workers.length} worker(s): ${workers.map((worker) => worker.httpUrl).join(' ')}`);
  return {
    workers,
    async add() {
      const worker = await add();
      await waitUntilReady(worker, Date.now() + STARTUP_TIMEOUT_MS);
      return worker;
    },
    async stop() {
      await Promise.all(workers.map((worker) => worker.process.stop({ graceMs: STOP_GRACE_MS })));
    },
  };
}

/** Polls the worker's /readyz: it answers 200 once the worker polls its task queue and Postgres answers. */
export async function waitUntilReady(worker: StackWorker, deadline: number): Promise<void> {
  let lastError: string;
  for (;;) {
    const exited = worker.process.exitDescription();
    if (exited !== null) throw new Error(`${exited} before it was ready:\n${worker.process.output()}`);
    try {
      const response = await fetch(`${worker.httpUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      lastError = `${response.status} ${(await response.text()).trim()}`;
      if (response.ok) return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `worker ${worker.index} was not ready in time (${lastError}):\n${worker.process.output()}`,
      );
    }
    await sleep(250);
  }
}
