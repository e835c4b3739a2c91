// The standalone Temporal Web UI (ui-server) of the native stack, pointed at the stack's server by a
// generated config/development.yaml: the fields of the module's own config/base.yaml and development.yaml.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { getFreePorts } from './freePorts';
import { startManagedProcess, type ManagedProcess } from './managedProcess';

export interface UiServerOptions {
  uiBinary: string;
  directory: string;
  ip: string;
  port?: number;
  temporalAddress: string;
  namespace: string;
  /** The certificates the UI presents to an mTLS server. */
  tls?: { caCertFile: string; clientCertFile: string; clientKeyFile: string; serverName: string };
  echo?: boolean;
  log: (line: string) => void;
}

export interface RunningUiServer {
  url: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 60_000;

export async function startUiServer(options: UiServerOptions): Promise<RunningUiServer> {
  const port = options.port ?? (await getFreePorts(1, options.ip))[0] ?? 0;
  const configDirectory = path.join(options.directory, 'config');
  await mkdir(configDirectory, { recursive: true });
  const config = {
    temporalGrpcAddress: options.temporalAddress,
    host: options.ip,
    port,
    publicPath: '',
    enableUi: true,
    // The stack serves plain HTTP on loopback; secure cookies would be dropped by the browser.
    cors: { cookieInsecure: true, allowOrigins: [], unsafeAllowAllOrigins: false },
    refreshInterval: '1m',
    defaultNamespace: options.namespace,
    showTemporalSystemNamespace: false,
    // It would call out to the internet for release news; the machines here have none.
    notifyOnNewVersion: false,
    auth: { enabled: false, providers: [] },
    tls:
      options.tls === undefined
        ? {}
        : {
            caFile: options.tls.caCertFile,
            certFile: options.tls.clientCertFile,
            keyFile: options.tls.clientKeyFile,
            enableHostVerification: true,
            serverName: options.tls.serverName,
          },
    forwardHeaders: [],
  };
  // The UI server reads base.yaml, then <env>.yaml over it; everything is in development.yaml.
  await writeFile(path.join(configDirectory, 'base.yaml'), '{}\n');
  await writeFile(path.join(configDirectory, 'development.yaml'), `${JSON.stringify(config, null, 2)}\n`);

  const ui = startManagedProcess({
    name: 'temporal ui-server',
    command: options.uiBinary,
    args: ['--root', options.directory, '--config', 'config', '--env', 'development', 'start'],
    logFile: path.join(options.directory, 'ui-server.log'),
    echo: options.echo,
  });
  const url = `http://${options.ip}:${port}`;
  try {
    await waitForHttp(`${url}/`, Date.now() + STARTUP_TIMEOUT_MS, ui);
  } catch (error) {
    await ui.stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${reason}\nui-server output (${ui.logFile}):\n${ui.output()}`, { cause: error });
  }
  options.log(`Temporal Web UI ${url}`);
  return { url, process: ui, stop: () => ui.stop() };
}

async function waitForHttp(url: string, deadline: number, process: ManagedProcess): Promise<void> {
  let lastError: string;
  for (;;) {
    const exited = process.exitDescription();
    if (exited !== null) throw new Error(exited);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      if (response.ok) return;
      lastError = `HTTP ${response.status}`;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer in time: ${lastError}`);
    await sleep(200);
  }
}
