// A plain-loop process, forked by the harness with an IPC channel: it is measured like a worker process
// (CPU seconds, peak RSS), and configured like one (loadConfig: PG_POOL_MAX, PG_PREPARED_STATEMENTS,
// MAIL_CONNECTIONS, timeouts).
import { loadConfig } from '../../../src/config/loadConfig';
import { createDatabase } from '../../../src/db/pool';
import { createGenericMailApiClient } from '../../devtools/genericMailApiClient';
import { defaultWorkerIdentity } from '../../../src/workerOptions';
import { runClosedLoop, runOpenLoop, type PlainLoopDependencies } from './plainLoop';

export type PlainCommand =
  | { kind: 'closed'; orderIds: string[]; concurrency: number; durationMs: number }
  | { kind: 'open'; orderIds: string[]; t0Ms: number; ratePerSecond: number; concurrency: number }
  | { kind: 'exit' };

export type PlainReply =
  | { kind: 'ready'; pid: number }
  | { kind: 'closed-done'; starts: [string, number][]; stoppedAtMs: number }
  | { kind: 'open-done' }
  | { kind: 'error'; message: string };

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const identity = defaultWorkerIdentity();
  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: `order-mail-bench plain ${identity}`,
    maxConnections: config.worker.pgPoolMax,
    statementTimeoutMs: config.worker.pgStatementTimeoutMs,
    preparedStatements: config.worker.pgPreparedStatements,
  });
  const mail = createGenericMailApiClient(config.mailApi);
  const deps: PlainLoopDependencies = { db, mail, mailIdentity: config.mail, recordedBy: identity };
  const send = (reply: PlainReply): void => void process.send?.(reply);

  process.on('message', (command: PlainCommand) => {
    const work = async (): Promise<void> => {
      if (command.kind === 'closed') {
        const { starts, stoppedAtMs } = await runClosedLoop(
          deps,
          command.orderIds,
          command.concurrency,
          command.durationMs,
        );
        send({ kind: 'closed-done', starts, stoppedAtMs });
      } else if (command.kind === 'open') {
        await runOpenLoop(deps, command.orderIds, command.t0Ms, command.ratePerSecond, command.concurrency);
        send({ kind: 'open-done' });
      } else {
        await mail.close();
        await db.close();
        process.disconnect();
      }
    };
    work().catch((error: unknown) =>
      send({ kind: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  });
  send({ kind: 'ready', pid: process.pid });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
