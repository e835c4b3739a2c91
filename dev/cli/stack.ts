// `npm run stack`: the production topology of docker-compose.yml, natively (dev/stack/stack.ts). Runs in
// the foreground until Ctrl-C; `npm run stack -- --down` (from another terminal) stops a running one.
//
//   npm run stack [-- --workers N] [--temporal-port P] [--ui-port P] [--fresh] [--cluster]
//   npm run stack -- --down
//
// --cluster runs the Temporal server as a cluster (dev/stack/temporalCluster.ts): two frontends behind one
// address, two history hosts sharing 16 shards, two matching hosts and the internal worker service, each a
// process of its own, on Temporal databases of their own (temporal_cluster, temporal_visibility_cluster).
//
// With DATABASE_URL set, Temporal's databases go on that Postgres server and the workers use DATABASE_URL;
// without it, an embedded Postgres keeps its data in .tmp/stack/postgres across runs (--fresh wipes it).
//
// Ctrl-C reaches every process of the terminal's foreground group at once, which would stop Postgres while
// the workers still drain. So this command starts the stack in a process group of its own and passes the
// signal on as SIGTERM; the stack then stops in order: workers (letting sends finish), UI, server, Postgres.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { releaseEmbeddedPostgresSignalHooks } from '../devtools/embeddedPostgres';
import { redact, startStack, type RunningStack } from '../stack/stack';
import { PROJECT_ROOT } from '../stack/stackSettings';

const STACK_DIRECTORY = path.join(PROJECT_ROOT, '.tmp', 'stack');
const STATE_FILE = path.join(STACK_DIRECTORY, 'stack.json');
// Workers drain sends in flight for up to WORKER_SHUTDOWN_GRACE_MS (70 s by default) before they exit.
const DOWN_TIMEOUT_MS = 120_000;

interface StackState {
  /** The stack's process, leader of the process group that holds every process it started. */
  pid: number;
  startedAt: string;
  temporalAddress: string;
  uiUrl: string | null;
  processes: { name: string; pid: number; logFile: string }[];
}

const USAGE = `Usage:
  npm run stack [-- --workers N] [--temporal-port P] [--ui-port P] [--fresh] [--cluster]
  npm run stack -- --down`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      down: { type: 'boolean', default: false },
      workers: { type: 'string', default: '3' },
      'temporal-port': { type: 'string' },
      'ui-port': { type: 'string' },
      fresh: { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      // Internal: the stack itself, in its own process group.
      run: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.down) {
    await down();
    return;
  }
  if (values.run) {
    await run({
      workers: integerOption('--workers', values.workers),
      temporalPort:
        values['temporal-port'] === undefined
          ? undefined
          : integerOption('--temporal-port', values['temporal-port']),
      uiPort: values['ui-port'] === undefined ? undefined : integerOption('--ui-port', values['ui-port']),
      fresh: values.fresh,
      cluster: values.cluster,
    });
    return;
  }
  await launch(process.argv.slice(2));
}

/** Starts the stack in a new process group and forwards Ctrl-C and friends to it as SIGTERM. */
async function launch(args: string[]): Promise<void> {
  const running = readState();
  if (running !== null && isAlive(running.pid) && isStackProcess(running.pid)) {
    throw new Error(`A stack is already running (pid ${running.pid}); stop it with: npm run stack -- --down`);
  }
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, '--run', ...args], {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
    detached: true,
  });
  let forwarded = false;
  const forward = (): void => {
    if (forwarded) return;
    forwarded = true;
    console.log('\n[stack] stopping (workers first, so sends in flight finish)…');
    if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, forward);
  const code = await new Promise<number>((resolve) =>
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128))),
  );
  process.exitCode = code;
}

async function run(options: {
  workers: number;
  temporalPort?: number;
  uiPort?: number;
  fresh: boolean;
  cluster: boolean;
}): Promise<void> {
  await releaseEmbeddedPostgresSignalHooks();
  let stopRequested = false;
  let wakeUp: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    wakeUp = resolve;
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      stopRequested = true;
      wakeUp();
    });
  }

  const databaseUrl = process.env.DATABASE_URL || undefined;
  if (options.fresh) await rm(path.join(STACK_DIRECTORY, 'postgres'), { recursive: true, force: true });
  await mkdir(STACK_DIRECTORY, { recursive: true });
  // Each run's configs and logs are new; only the Postgres data is kept.
  for (const folder of ['temporal', 'ui', 'workers']) {
    await rm(path.join(STACK_DIRECTORY, folder), { recursive: true, force: true });
  }

  const stack: RunningStack = await startStack({
    directory: STACK_DIRECTORY,
    workers: options.workers,
    postgresUrl: databaseUrl,
    appDatabaseUrl: databaseUrl,
    keepData: true,
    temporalPort: options.temporalPort,
    uiPort: options.uiPort,
    cluster: options.cluster,
  });
  const state: StackState = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    temporalAddress: stack.temporalAddress,
    uiUrl: stack.uiUrl,
    processes: stack.processes(),
  };
  await writeFile(STATE_FILE, `${JSON.stringify(state, null, 2)}\n`);
  await printSummary(stack);

  if (!stopRequested) await stopped;
  try {
    await stack.stop();
  } finally {
    await rm(STATE_FILE, { force: true });
  }
  console.log('[stack] stopped');
}

async function printSummary(stack: RunningStack): Promise<void> {
  const cluster = stack.cluster;
  const shards = cluster === null ? {} : await cluster.shardOwnership();
  const lines = [
    '',
    `Temporal ${cluster === null ? 'server ' : 'cluster'}  ${stack.temporalAddress}   (namespace ${stack.namespace})`,
    ...(cluster?.hosts.map(
      (host) =>
        `  ${host.name.padEnd(12)}    ${host.grpcAddress}` +
        (host.service === 'history' ? `  ${shards[host.name] ?? 0} of ${cluster.historyShards} shards` : '') +
        `  (log: ${host.logFile})`,
    ) ?? []),
    `Temporal Web UI   ${stack.uiUrl ?? '(none)'}`,
    `App database      ${redact(stack.databaseUrl)}`,
    `Mail sandbox      ${stack.sandbox.url}`,
    ...(stack.workers?.workers.map(
      (worker) =>
        `Worker ${worker.index}          ${worker.httpUrl}/metrics  (log: ${worker.process.logFile})`,
    ) ?? []),
    '',
    'Start mails from another terminal:',
    `  TEMPORAL_ADDRESS=${stack.temporalAddress} npm run start-mail -- <orderId>`,
    'Stop with Ctrl-C here, or: npm run stack -- --down',
    '',
  ];
  console.log(lines.join('\n'));
}

/** Stops the stack that `npm run stack` started, even if its own process died without cleaning up. */
async function down(): Promise<void> {
  const state = readState();
  if (state === null) {
    console.log('No stack is running (no .tmp/stack/stack.json).');
    return;
  }
  if (isAlive(state.pid) && !isStackProcess(state.pid)) {
    // The stack died long ago and its pid now belongs to something else: signal nothing.
    console.log(
      `The recorded stack process ${state.pid} is gone (the pid is reused); removing the stale state.`,
    );
    await rm(STATE_FILE, { force: true });
    return;
  }
  if (isAlive(state.pid)) {
    console.log(`Stopping the stack (pid ${state.pid}); workers first, so sends in flight finish…`);
    process.kill(state.pid, 'SIGTERM');
    const deadline = Date.now() + DOWN_TIMEOUT_MS;
    while (isAlive(state.pid) && Date.now() < deadline) await sleep(250);
    // Helpers of the stack's process (tsx's esbuild service) leave a moment after it.
    const settle = Date.now() + 3_000;
    while (groupIsAlive(state.pid) && Date.now() < settle) await sleep(100);
  }
  // Whatever is left of the process group (the stack was SIGKILLed, or did not stop in time) is killed.
  const leftovers = [state.pid, ...state.processes.map((entry) => entry.pid)].filter(isAlive);
  if (leftovers.length > 0 || groupIsAlive(state.pid)) {
    console.log(`Killing what is left of the stack: ${leftovers.join(', ') || `process group ${state.pid}`}`);
    try {
      process.kill(-state.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
    for (const pid of leftovers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
  await rm(STATE_FILE, { force: true });
  console.log('Stack stopped.');
}

function readState(): StackState | null {
  if (!existsSync(STATE_FILE)) return null;
  return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as StackState;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `pid` runs this file (Linux /proc); elsewhere it is taken on trust. */
function isStackProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path.join('dev', 'cli', 'stack.ts'));
  } catch {
    return !existsSync('/proc/self');
  }
}

function groupIsAlive(pgid: number): boolean {
  return isAlive(-pgid);
}

function integerOption(name: string, value: string): number {
  if (!/^[0-9]+$/.test(value))
    throw new Error(`${name} must be a whole number (got ${JSON.stringify(value)})\n${USAGE}`);
  return Number(value);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
