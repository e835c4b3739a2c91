// Brings up what the runner is not given an address for: embedded Postgres (else DATABASE_URL), a Temporal dev
// server with its Web UI (else TEMPORAL_ADDRESS), and always the mail sandbox (HTTP or SMTP), relaying what it
// accepted to a MailDev inbox unless the run has none. Everything started here is stopped by stop(), which
// never throws and never waits forever. With `cluster` (chaos --cluster), the Temporal server is the stack's
// cluster of processes (dev/stack/temporalCluster.ts) on the run's Postgres instead of the dev server.
import { createServer } from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { migrate } from '../../src/db/migrator';
import { startTemporalDevServer, type TemporalDevServer } from '../devtools/devServer';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../devtools/embeddedPostgres';
import { getFreePort } from '../../src/shared/freePort';
import { devServerSearchAttributes } from '../devtools/searchAttributeFlags';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import { startMailDev, type RunningMailDev } from '../devtools/mailDev';
import { loadStackSettings } from '../stack/stackSettings';
import { ensureStackTools } from '../stack/stackTools';
import {
  CLUSTER_HISTORY_SHARDS,
  startTemporalCluster,
  type RunningTemporalCluster,
} from '../stack/temporalCluster';
import { applyTemporalSchema } from '../stack/temporalSchema';
import { startMailTarget, type DemoMailTarget } from './mailTarget';
import { startFailoverTarget } from './failoverTarget';
import type { FailoverSettings, FaultMix, MailTransportName } from './runOptions';
import type { AnswerTimes } from './profiles';
import type { VerificationRunOptions } from './verificationOptions';

const STOP_DEADLINE_MS = 15_000;

export interface Stack {
  databaseUrl: string;
  temporal: { address: string; namespace: string; uiUrl: string | null };
  mail: DemoMailTarget;
  /** The MailDev inbox the sandbox relays to; null when the run has none (--no-inbox). */
  inbox: { webUrl: string } | null;
  /** Null when the runner did not start the part (an address was given), so it cannot restart it. */
  restartPostgres: (() => Promise<void>) | null;
  restartTemporal: (() => Promise<void>) | null;
  /** The Temporal cluster of a --cluster run; null on the dev server. */
  cluster: RunningTemporalCluster | null;
  stop(): Promise<void>;
}

export async function startStack(options: {
  env: NodeJS.ProcessEnv;
  transport: MailTransportName;
  faults: FaultMix;
  /** The upgrade run's longer slow and hung answers (upgradeLoad.ts); null: the usual ones. */
  answerTimes?: AnswerTimes | null;
  seed: number;
  inbox: boolean;
  verification: VerificationRunOptions;
  /** Keep the dev server's state in this SQLite file, so a restart loses nothing. */
  temporalDbFile: string | null;
  /** Run the Temporal server as a cluster; its configs and logs go in this folder. Null: the dev server. */
  clusterDirectory: string | null;
  /** --failover: two providers' sandboxes instead of one (dev/demo/failoverTarget.ts). */
  failover?: FailoverSettings | null;
  onProgress: (line: string) => void;
}): Promise<Stack> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async (): Promise<void> => {
    // Reverse order of start; each part gets its own deadline so one stuck part cannot keep the rest alive.
    for (const stop of stops.reverse()) await withDeadline(stop(), STOP_DEADLINE_MS);
    stops.length = 0;
  };
  try {
    let postgres: Awaited<ReturnType<typeof startPostgres>>;
    let temporal: Awaited<ReturnType<typeof startTemporal>>;
    let cluster: RunningTemporalCluster | null = null;
    if (options.clusterDirectory !== null) {
      if (options.env.TEMPORAL_ADDRESS) {
        throw new Error('--cluster starts a Temporal cluster of its own; unset TEMPORAL_ADDRESS');
      }
      // The cluster keeps its state in the run's Postgres, so Postgres comes first.
      postgres = await startPostgres(options.env.DATABASE_URL, options.onProgress, 400);
      if (postgres.server) stops.push(() => postgres.server!.stop());
      cluster = await startCluster(postgres.databaseUrl, options.clusterDirectory, options.onProgress);
      const started = cluster;
      stops.push(() => started.stop());
      temporal = {
        info: { address: cluster.address, namespace: loadStackSettings().namespace, uiUrl: null },
        server: null,
      };
    } else {
      [postgres, temporal] = await Promise.all([
        startPostgres(options.env.DATABASE_URL, options.onProgress),
        startTemporal(options.env, options.temporalDbFile, options.onProgress),
      ]);
      if (postgres.server) stops.push(() => postgres.server!.stop());
      if (temporal.server) stops.push(() => temporal.server!.stop());
    }
    await migrate(postgres.databaseUrl);

    const inbox = options.inbox ? await startInbox() : null;
    if (inbox !== null) {
      stops.push(() => inbox.stop());
      options.onProgress(
        `inbox: MailDev ${inbox.webUrl} (every mail the sandbox accepted, as a customer sees it)`,
      );
    }
    const failover = options.failover ?? null;
    const mail =
      failover === null
        ? await startMailTarget({
            transport: options.transport,
            faults: options.faults,
            answerTimes: options.answerTimes ?? null,
            seed: options.seed,
            relayTo: inbox === null ? null : { host: inbox.smtpHost, port: inbox.smtpPort },
            verification: options.verification,
            databaseUrl: postgres.databaseUrl,
          })
        : await startFailoverTarget({
            faults: options.faults,
            seed: options.seed,
            settleDelayMs: options.verification.settleDelayMs,
            skipAfterFailures: failover.skipAfterFailures,
            skipForMs: failover.skipForMs,
          });
    stops.push(() => mail.close());
    options.onProgress(
      `mail sandbox (${mail.transport}${mail.provider === null ? '' : `, as ${mail.provider}`}): ${mail.address}` +
        (mail.provider === null
          ? ''
          : mail.verifies
            ? '; workers verify unknown outcomes with it'
            : '; no verification'),
    );

    return {
      databaseUrl: postgres.databaseUrl,
      temporal: temporal.info,
      mail,
      inbox: inbox === null ? null : { webUrl: inbox.webUrl },
      restartPostgres: postgres.server ? () => postgres.server!.restart() : null,
      restartTemporal:
        cluster !== null
          ? () => cluster.restartAll()
          : temporal.server?.restart
            ? () => temporal.server!.restart!()
            : null,
      cluster,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function startPostgres(
  databaseUrl: string | undefined,
  onProgress: (line: string) => void,
  maxConnections?: number,
): Promise<{ databaseUrl: string; server: EmbeddedPostgresServer | null }> {
  if (databaseUrl !== undefined && databaseUrl !== '') {
    onProgress('postgres: DATABASE_URL (not started here)');
    return { databaseUrl, server: null };
  }
  const server = await startEmbeddedPostgres(maxConnections === undefined ? {} : { maxConnections });
  onProgress(`postgres: embedded, ${redactPassword(server.connectionString)}`);
  return { databaseUrl: server.connectionString, server };
}

async function startTemporal(
  env: NodeJS.ProcessEnv,
  dbFilename: string | null,
  onProgress: (line: string) => void,
): Promise<{
  info: { address: string; namespace: string; uiUrl: string | null };
  server: TemporalDevServer | null;
}> {
  const namespace = env.TEMPORAL_NAMESPACE || 'default';
  if (env.TEMPORAL_ADDRESS !== undefined && env.TEMPORAL_ADDRESS !== '') {
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
    try {
      await ensureSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
    onProgress(`temporal: TEMPORAL_ADDRESS ${env.TEMPORAL_ADDRESS} (not started here)`);
    return { info: { address: env.TEMPORAL_ADDRESS, namespace, uiUrl: null }, server: null };
  }
  // The usual ports when they are free, so the Web UI is where the Temporal docs say; any free ones otherwise.
  const server = await startTemporalDevServer({
    port: await preferredPort(7233),
    uiPort: await preferredPort(8233),
    namespace,
    searchAttributes: devServerSearchAttributes(),
    // WAL without fsync: every commit still reaches the OS before the server answers, so a restart (or a killed
    // server) loses nothing; only a machine crash could. Several times faster than SQLite's default on a busy box.
    ...(dbFilename === null
      ? {}
      : { dbFilename, sqlitePragmas: { journal_mode: 'wal', synchronous: 'off' } }),
  });
  onProgress(
    `temporal: dev server ${server.address}${dbFilename === null ? '' : ` (db file ${path.basename(dbFilename)})`}` +
      (server.uiUrl === null ? '' : `; Web UI ${server.uiUrl} (watch the workflows run)`),
  );
  return { info: { address: server.address, namespace, uiUrl: server.uiUrl }, server };
}

/**
 * The stack's Temporal cluster (two frontends behind a balancer, two history hosts, two matching hosts, the
 * worker service) on databases of its own in the run's Postgres (the admin URL: it creates them).
 */
async function startCluster(
  postgresUrl: string,
  directory: string,
  onProgress: (line: string) => void,
): Promise<RunningTemporalCluster> {
  const settings = loadStackSettings();
  const tools = await ensureStackTools(settings, { log: onProgress });
  const temporalDatabase = `${settings.temporalDatabase}_cluster`;
  const visibilityDatabase = `${settings.temporalVisibilityDatabase}_cluster`;
  await applyTemporalSchema({
    sqlTool: tools.sqlTool,
    schemaDirectory: tools.schemaDirectory,
    adminUrl: postgresUrl,
    temporalDatabase,
    visibilityDatabase,
  });
  const cluster = await startTemporalCluster({
    serverBinary: tools.temporalServer,
    temporalCli: tools.temporalCli,
    directory,
    ip: '127.0.0.1',
    postgresUrl,
    temporalDatabase,
    visibilityDatabase,
    historyShards: CLUSTER_HISTORY_SHARDS,
    namespace: settings.namespace,
    namespaceRetention: settings.namespaceRetention,
    searchAttributes: settings.searchAttributes,
    log: onProgress,
  });
  const shards = await cluster.shardOwnership();
  onProgress(
    `temporal: cluster ${cluster.address} (${cluster.hosts.map((host) => host.name).join(', ')}); shards ` +
      Object.entries(shards)
        .map(([host, owned]) => `${host} ${owned}`)
        .join(', '),
  );
  return cluster;
}

/**
 * MailDev on its usual ports when they are free, like the Web UI's below. Another run (a second demo, `npm run
 * local`) may take one between the check and MailDev's bind: then any free ones.
 */
async function startInbox(): Promise<RunningMailDev> {
  const ports = { smtpPort: await preferredPort(1025), webPort: await preferredPort(1080) };
  try {
    return await startMailDev(ports);
  } catch (error) {
    const usual = ports.smtpPort === 1025 || ports.webPort === 1080;
    if (!usual || !String(error).includes('EADDRINUSE')) throw error;
    return startMailDev();
  }
}

async function preferredPort(port: number): Promise<number> {
  const free = await new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
  return free ? port : getFreePort();
}

export function redactPassword(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return '(unparsable URL)';
  }
}

async function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
