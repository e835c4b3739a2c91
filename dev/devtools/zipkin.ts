// A Zipkin server (its in-memory storage, its span intake and its own web UI, Lens) on a free loopback port,
// for the trace test: the executable jar `bash scripts/setup.sh --tracing` fetches into the tools folder, at
// the version setup.sh pins (read from there, so the two never disagree). Jaeger's binary from the Go module
// proxy has no UI of its own (dev/devtools/jaeger.ts); Zipkin's jar has one, so the trace is looked at there.
// Stopped with its process; it keeps nothing on disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { getFreePort } from '../../src/shared/freePort';
import { stackToolsDirectory } from '../stack/stackTools';

const SETUP_SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'setup.sh');
// A cold JVM on a busy 2-core machine takes a while to start a Spring Boot application.
const START_TIMEOUT_MS = 120_000;

export interface RunningZipkin {
  /** Where spans are POSTed (Zipkin's JSON v2): what OTEL_EXPORTER_ZIPKIN_ENDPOINT is set to. */
  spansEndpoint: string;
  /** The server's base URL: the UI is at `/zipkin/`, the API at `/api/v2/`. */
  url: string;
  stop(): Promise<void>;
}

export function zipkinJar(env: NodeJS.ProcessEnv = process.env): string {
  const version = /^ZIPKIN_VERSION=(\S+)$/m.exec(readFileSync(SETUP_SCRIPT, 'utf8'))?.[1];
  if (version === undefined) throw new Error(`no ZIPKIN_VERSION in ${SETUP_SCRIPT}`);
  return path.join(stackToolsDirectory(env), `zipkin-${version}`, 'zipkin.jar');
}

export async function startZipkin(): Promise<RunningZipkin> {
  const jar = zipkinJar();
  if (!existsSync(jar)) {
    throw new Error(`${jar} is missing: run bash scripts/setup.sh --tracing (a 131 MB download, once)`);
  }
  const port = await getFreePort('127.0.0.1');
  const child = spawn(
    'java',
    [
      // A short-lived test server: the quick JIT tier starts it sooner, and it needs little memory.
      '-XX:TieredStopAtLevel=1',
      '-Xmx256m',
      '-jar',
      jar,
      // Loopback only (its default is every interface).
      `--armeria.ports[0].ip=127.0.0.1`,
      `--armeria.ports[0].port=${port}`,
      '--armeria.ports[0].protocols[0]=http',
      '--logging.level.root=WARN',
    ],
    {
      env: { ...process.env, STORAGE_TYPE: 'mem', QUERY_PORT: String(port), SELF_TRACING_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = () => stopProcess(child);
  try {
    await waitUntilHealthy(`${url}/health`, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { spansEndpoint: `${url}/api/v2/spans`, url, stop };
}

async function waitUntilHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`zipkin exited (${child.exitCode}):\n${output()}`);
    const healthy = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`zipkin did not become healthy within ${START_TIMEOUT_MS / 1000} s:\n${output()}`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
