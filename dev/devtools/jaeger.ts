// A Jaeger v2 (OTLP receiver, in-memory storage, query API and UI) on free loopback ports, for the trace
// test: the binary `bash scripts/setup.sh --tracing` builds into the tools folder, at the version setup.sh
// pins (read from there, so the two never disagree). Stopped with its process; it keeps nothing on disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getFreePort } from '../../src/shared/freePort';
import { isExecutableFile, stackToolsDirectory } from './toolFolders';

const SETUP_SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'setup.sh');

export interface RunningJaeger {
  /** OTLP over HTTP: what OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  otlpEndpoint: string;
  /** The query service: its HTTP API (/api/traces/...) and the UI. */
  queryUrl: string;
  stop(): Promise<void>;
}

export function jaegerBinary(env: NodeJS.ProcessEnv = process.env): string {
  const version = /^JAEGER_VERSION=(\S+)$/m.exec(readFileSync(SETUP_SCRIPT, 'utf8'))?.[1];
  if (version === undefined) throw new Error(`no JAEGER_VERSION in ${SETUP_SCRIPT}`);
  return path.join(stackToolsDirectory(env), `jaeger-${version}`, 'jaeger');
}

export async function startJaeger(): Promise<RunningJaeger> {
  const binary = jaegerBinary();
  if (!isExecutableFile(binary)) {
    throw new Error(
      `${binary} is missing: run bash scripts/setup.sh --tracing (a build of about 10 minutes, once)`,
    );
  }
  const free = () => getFreePort('127.0.0.1');
  const [otlp, query, queryGrpc, health, metrics] = await Promise.all([
    free(),
    free(),
    free(),
    free(),
    free(),
  ]);
  const directory = await mkdtemp(path.join(tmpdir(), 'jaeger-'));
  const configPath = path.join(directory, 'config.yaml');
  await writeFile(configPath, jaegerConfig({ otlp, query, queryGrpc, health, metrics }));
  const child = spawn(binary, ['--config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    await rm(directory, { recursive: true, force: true });
  };
  try {
    await waitUntilHealthy(`http://127.0.0.1:${health}/status`, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { otlpEndpoint: `http://127.0.0.1:${otlp}`, queryUrl: `http://127.0.0.1:${query}`, stop };
}

/** Jaeger's all-in-one configuration, cut to an OTLP/HTTP receiver and memory storage, loopback only. */
function jaegerConfig(ports: Record<'otlp' | 'query' | 'queryGrpc' | 'health' | 'metrics', number>): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: basic
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: ${ports.metrics}
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${ports.query}
    grpc:
      endpoint: 127.0.0.1:${ports.queryGrpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${ports.health}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${ports.otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

async function waitUntilHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`jaeger exited (${child.exitCode}):\n${output()}`);
    const healthy = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`jaeger did not become healthy within 30 s:\n${output()}`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
