import { spawn, type ChildProcess } from 'node:child_process';
import { findTemporalCli } from './findTemporalCli';
import { getFreePort } from '../../src/shared/freePort';
import type { ResolvedDevServerOptions, TemporalDevServer, TemporalDevServerOptions } from './devServerTypes';
import { startSdkDevServer } from './sdkDevServer';
import { waitForTemporal } from './waitForTemporal';

export type { ResolvedDevServerOptions, TemporalDevServer, TemporalDevServerOptions } from './devServerTypes';

const IP = '127.0.0.1';
// A healthy start takes 1-5 s; a busy 2-core CI machine needs far more than the SDK's 5 s wait.
const STARTUP_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_CHARS = 4_000;

/**
 * Starts `temporal server start-dev` from the binary `findTemporalCli` finds, and resolves once the
 * namespace is served. Without a binary it falls back to the SDK's `createLocal`, which downloads one.
 */
export async function startTemporalDevServer(
  options: TemporalDevServerOptions = {},
): Promise<TemporalDevServer> {
  const resolved: ResolvedDevServerOptions = {
    ip: IP,
    port: options.port ?? (await getFreePort(IP)),
    uiPort: options.uiPort === null ? null : (options.uiPort ?? (await getFreePort(IP))),
    dbFilename: options.dbFilename,
    sqlitePragmas: options.sqlitePragmas ?? {},
    searchAttributes: options.searchAttributes ?? {},
    dynamicConfig: options.dynamicConfig ?? {},
    namespace: options.namespace ?? 'default',
  };
  const executable = findTemporalCli();
  if (executable === null) return startSdkDevServer(resolved);

  let server = await launch(executable, resolved);
  return {
    address: `${resolved.ip}:${resolved.port}`,
    uiUrl: resolved.uiPort === null ? null : `http://${resolved.ip}:${resolved.uiPort}`,
    namespace: resolved.namespace,
    stop: () => server.stop(),
    async restart() {
      await server.stop();
      server = await launch(executable, resolved);
    },
  };
}

function devServerArguments(options: ResolvedDevServerOptions): string[] {
  return [
    'server',
    'start-dev',
    '--ip',
    options.ip,
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...(options.uiPort === null ? ['--headless'] : ['--ui-port', String(options.uiPort)]),
    ...(options.dbFilename === undefined ? [] : ['--db-filename', options.dbFilename]),
    ...Object.entries(options.sqlitePragmas).flatMap(([name, value]) => [
      '--sqlite-pragma',
      `${name}=${value}`,
    ]),
    ...Object.entries(options.searchAttributes).flatMap(([name, type]) => [
      '--search-attribute',
      `${name}=${type}`,
    ]),
    // The version check calls out to the internet, which CI machines here do not reach (the SDK turns it
    // off for the same reason).
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    ...Object.entries(options.dynamicConfig).flatMap(([key, value]) => [
      '--dynamic-config-value',
      `${key}=${value}`,
    ]),
  ];
}

interface RunningServer {
  stop(): Promise<void>;
}

async function launch(executable: string, options: ResolvedDevServerOptions): Promise<RunningServer> {
  const child = spawn(executable, devServerArguments(options), { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = keepOutputTail(child);
  let exitDescription: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitDescription = `exited with ${signal ?? `code ${code}`}`;
      resolve();
    });
  });
  child.once('error', (error) => {
    exitDescription = `could not start: ${error.message}`;
  });
  // A test run that crashes or calls process.exit must not leave a server holding ports. (A SIGKILLed
  // parent cannot run this; Node has no parent-death signal.)
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (exitDescription === null) {
      child.kill('SIGTERM');
      const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(escalate);
    }
  };

  const address = `${options.ip}:${options.port}`;
  try {
    await waitForTemporal({
      address,
      namespace: options.namespace,
      deadline: Date.now() + STARTUP_TIMEOUT_MS,
      hasFailed: () => (exitDescription === null ? null : `temporal server start-dev ${exitDescription}`),
    });
  } catch (error) {
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `${reason}\ncommand: ${executable} ${devServerArguments(options).join(' ')}\n` +
        `last output:\n${output()}`,
      { cause: error },
    );
  }
  return { stop };
}

/** Keeps the last few KB of the server's output for error messages; echoes it when DEBUG_TEMPORAL=1. */
function keepOutputTail(child: ChildProcess): () => string {
  let tail = '';
  const echo = process.env.DEBUG_TEMPORAL === '1';
  const onData = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    if (echo) process.stderr.write(chunk);
  };
  // Reading both pipes also matters on its own: a full pipe would block the server.
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return () => tail;
}
