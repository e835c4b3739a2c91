// MailDev (a real SMTP server with a web inbox) as a child process on loopback, for the demo and the browser
// test: the sandboxes relay every message they accepted to it, so people look at the mail instead of a count.
// MailDev 3 is an ES module with its own CLI; running the CLI keeps this CommonJS project out of its loader.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getFreePort } from '../../src/shared/freePort';

export interface MailDevOptions {
  /** Default: a free port. */
  smtpPort?: number;
  /** Default: a free port. */
  webPort?: number;
}

export interface RunningMailDev {
  smtpHost: string;
  smtpPort: number;
  /** The inbox, e.g. http://127.0.0.1:1080 (no trailing slash). */
  webUrl: string;
  /** Stops the MailDev process (only this one: it is ours, found by its pid). Idempotent. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
/** How long to wait for the web inbox to answer. */
const START_TIMEOUT_MS = 30_000;
/** The last line of the banner MailDev 3 prints after it bound both of its ports. */
const BANNER_END = 'Press Ctrl+C to stop';

export async function startMailDev(options: MailDevOptions = {}): Promise<RunningMailDev> {
  const smtpPort = options.smtpPort ?? (await getFreePort(HOST));
  const webPort = options.webPort ?? (await getFreePort(HOST));
  const cli = findMailDevCli();
  // Without a directory of its own MailDev writes every .eml to one shared /tmp/maildev, forever and across
  // runs; this one is empty at start (so nothing old is restored) and removed at stop.
  const mailDirectory = await mkdtemp(path.join(tmpdir(), 'order-mail-maildev-'));
  const child = spawn(
    process.execPath,
    [
      cli,
      ...['--smtp', String(smtpPort), '--ip', HOST, '--web', String(webPort), '--web-ip', HOST],
      ...['--mail-directory', mailDirectory],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Not --silent: MailDev prints its banner only once both ports are bound, which proves that this process got
  // them. A health answer alone could come from another MailDev that took the port first. The output is kept
  // (the last of it, for errors) and otherwise drained, so a full pipe never blocks MailDev.
  let output = '';
  const bannerSeen = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-2_000);
      if (output.includes(BANNER_END)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
  });
  const webUrl = `http://${HOST}:${webPort}`;
  const stopProcess = stopper(child);
  const stop = async (): Promise<void> => {
    await stopProcess();
    await rm(mailDirectory, { recursive: true, force: true });
  };
  try {
    await waitForInbox(webUrl, child, bannerSeen, START_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw new Error(
      `MailDev did not start: ${(error as Error).message}${output === '' ? '' : `\n${output}`}`,
      { cause: error },
    );
  }
  return { smtpHost: HOST, smtpPort, webUrl, stop };
}

/** MailDev exports only an `import` entry, so require.resolve cannot find it; its CLI file is looked up instead. */
function findMailDevCli(): string {
  for (const dir of require.resolve.paths('maildev') ?? []) {
    const cli = path.join(dir, 'maildev', 'dist', 'bin', 'maildev.js');
    if (existsSync(cli)) return cli;
  }
  throw new Error('MailDev is not installed: run npm ci (it is a devDependency).');
}

/** Ready when this child printed its banner (it bound both ports) and the inbox answers its health check. */
async function waitForInbox(
  webUrl: string,
  child: ChildProcess,
  bannerSeen: Promise<void>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let bound = false;
  void bannerSeen.then(() => (bound = true));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`it exited with code ${child.exitCode}`);
    if (bound) {
      try {
        const response = await fetch(`${webUrl}/api/healthz`, { signal: AbortSignal.timeout(2_000) });
        await response.body?.cancel();
        if (response.ok) return;
      } catch {
        // Not answering yet.
      }
    }
    if (Date.now() > deadline) throw new Error(`no answer from ${webUrl} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function stopper(child: ChildProcess): () => Promise<void> {
  let stopping: Promise<void> | null = null;
  return () => {
    stopping ??= new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      // A MailDev that ignores SIGTERM is killed; the timer must not keep the caller's process alive.
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
    });
    return stopping;
  };
}
