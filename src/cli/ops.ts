// `npm run ops -- status|list|retry|resolve …`: the operator CLI. Thin: the grammar is src/ops/opsCommand.ts,
// the acts are src/ops/*, and this file wires them to the environment and the terminal.
// Exit codes: 0 done, 1 refused or failed (nothing changed unless it says so), 2 bad arguments.
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { connectOrderMailClient } from '../client';
import { ConfigError } from '../config/envReader';
import { loadOpsConfig } from '../config/loadOpsConfig';
import { createDatabase } from '../db/pool';
import { describePostgresFailure } from '../dependencyRetry';
import { formatList, formatResolve, formatRetry, formatStatus } from '../ops/formatOpsOutput';
import { listOrderMails } from '../ops/listOrderMails';
import { OPS_USAGE, parseOpsCommand, UsageError, type OpsCommand } from '../ops/opsCommand';
import { OpsRefusal, type OpsContext } from '../ops/opsContext';
import { readOrderMailStatus } from '../ops/orderMailStatus';
import { resolveOrderMail } from '../ops/resolveOrderMail';
import { retryOrderMail } from '../ops/retryOrderMail';
import { formatProviderStatus, runProviderAct } from '../ops/providerOps';
import { lookupRetentionMs, readDrainingProviders, readProviderList } from '../config/providerList';
import { processIo, type CliIo } from './cliIo';

export async function main(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
  io: CliIo = processIo,
): Promise<number> {
  let command: OpsCommand;
  try {
    command = parseOpsCommand(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`${error.message}\n\n${OPS_USAGE}`);
    return 2;
  }
  if (command.name === 'help') {
    io.out(OPS_USAGE);
    return 0;
  }

  let config;
  try {
    config = loadOpsConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(error.message);
    return 2;
  }
  if (config.databaseUrl === null) {
    io.err('DATABASE_URL is required: the mail log in Postgres is the source of truth.');
    return 2;
  }

  const db = createDatabase({ connectionString: config.databaseUrl, applicationName: 'order-mail-ops' });
  if (command.name === 'provider') {
    // Postgres only: the providers' health is shared through it, and Temporal has no part in it.
    const listProblems: string[] = [];
    const named = env.MAIL_PROVIDERS?.trim() || env.MAIL_PROVIDER?.trim();
    const configured = named ? readProviderList(env, listProblems, 'generic').map(String) : null;
    const draining =
      configured === null
        ? []
        : readDrainingProviders(env.MAIL_PROVIDERS_DRAINING ?? null, configured, listProblems);
    if (listProblems.length > 0) {
      io.err(listProblems.join('\n'));
      await db.close();
      return 2;
    }
    try {
      const operator = command.operator?.trim() || config.operator;
      const status = await runProviderAct(db, command.provider, {
        operator,
        configured,
        draining,
        retentionMs: (provider) => lookupRetentionMs(env, provider, configured?.indexOf(provider) ?? 0),
      });
      io.out(command.json ? JSON.stringify(status, null, 2) : formatProviderStatus(status));
      return 0;
    } catch (error) {
      return reportFailure(io, error, config.databaseUrl);
    } finally {
      await db.close();
    }
  }
  try {
    const client = await connectOrderMailClient({
      address: config.temporal.address,
      addressSetting: 'TEMPORAL_ADDRESS',
      namespace: config.temporal.namespace,
    });
    try {
      const operator = ('operator' in command ? command.operator?.trim() : undefined) || config.operator;
      const ctx: OpsContext = {
        db,
        client,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        uiBaseUrl: config.uiBaseUrl,
        operator,
        configured: configuredProviders(env),
      };
      io.out(await run(ctx, command));
      return 0;
    } finally {
      await client.connection.close();
    }
  } catch (error) {
    return reportFailure(io, error, config.databaseUrl);
  } finally {
    await db.close();
  }
}

/** A refusal says which rule refused; an unreachable Postgres is named by its address and DATABASE_URL (no password). */
function reportFailure(io: CliIo, error: unknown, databaseUrl: string): number {
  if (error instanceof OpsRefusal) {
    io.err(`Refused (${error.code}): ${error.message}`);
    return 1;
  }
  io.err(`Failed: ${describePostgresFailure(error, databaseUrl, 'DATABASE_URL')}`);
  return 1;
}

async function run(
  ctx: OpsContext,
  command: Exclude<OpsCommand, { name: 'help' | 'provider' }>,
): Promise<string> {
  const json = (value: unknown) => JSON.stringify(value, null, 2);
  switch (command.name) {
    case 'status': {
      const status = await readOrderMailStatus(ctx, command.orderId);
      return command.json ? json(status) : formatStatus(status);
    }
    case 'list': {
      const listed = await listOrderMails(ctx, command);
      return command.json ? json(listed) : formatList(listed, command.filter);
    }
    case 'retry': {
      const result = await retryOrderMail(ctx, command);
      return command.json ? json(result) : formatRetry(result);
    }
    case 'resolve': {
      const act = await resolveOrderMail(ctx, command);
      return command.json ? json(act) : formatResolve(act);
    }
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 1;
    },
  );
}

/** MAIL_PROVIDERS (or MAIL_PROVIDER) of the ops environment, for status's hints; null when unset or unreadable. */
function configuredProviders(env: Record<string, string | undefined>): string[] | null {
  if (!(env.MAIL_PROVIDERS?.trim() || env.MAIL_PROVIDER?.trim())) return null;
  const problems: string[] = [];
  const list = readProviderList(env, problems, 'generic').map(String);
  return problems.length === 0 ? list : null;
}
