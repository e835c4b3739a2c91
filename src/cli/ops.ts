// `npm run ops -- …`: the operator CLI, thin (grammar: src/ops/opsCommand.ts; acts: src/ops/*). It runs as the
// operator's own login (OPS_DATABASE_URL), which names who acted. Exit: 0 done, 1 refused or failed, 2 bad args.
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import os from 'node:os';
import { connectOrderMailClient } from '../client';
import { ConfigError } from '../config/envReader';
import { loadOpsConfig } from '../config/loadOpsConfig';
import { createDatabase, type Database } from '../db/pool';
import { describePostgresFailure } from '../dependencyRetry';
import { dryRunBulkAct, runBulkAct } from '../ops/bulkActs';
import {
  formatBulkDryRun,
  formatBulkProgress,
  formatBulkRun,
  formatList,
  formatResolve,
  formatRetry,
  formatStatus,
} from '../ops/formatOpsOutput';
import { listOrderMails } from '../ops/listOrderMails';
import { OPS_USAGE, parseOpsCommand, UsageError, type OpsCommand } from '../ops/opsCommand';
import { OpsRefusal, type OpsContext } from '../ops/opsContext';
import { readOrderMailStatus } from '../ops/orderMailStatus';
import { resolveOrderMail } from '../ops/resolveOrderMail';
import { retryOrderMail } from '../ops/retryOrderMail';
import {
  formatPreview,
  loadPreviewSettings,
  previewOrderMail,
  type PreviewSettings,
} from '../ops/previewOrderMail';
import {
  loadMailTemplates,
  MailRenderError,
  MailTemplateError,
  type MailTemplates,
} from '../mail/template/mailTemplates';
import { mailFieldsWith } from '../mail/template/mailFields';
import { checkOrderContract, OrderContractError } from '../db/orderContract';
import { formatProviderStatus, runProviderAct } from '../ops/providerOps';
import { formatHold, formatResume, holdSends, resumeSends } from '../ops/sendHold';
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
  if (command.name === 'preview') return preview(command, env, io);

  let config;
  try {
    config = loadOpsConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(error.message);
    return 2;
  }
  if (config.databaseUrl === null) {
    // No fallback to DATABASE_URL: the workers' login may write no act (migration 0057).
    io.err(
      'OPS_DATABASE_URL is required: your own database login, a member of order_mail_operators (docs/operating.md, ' +
        '"Who you are"). The workers\' DATABASE_URL is not used: acts are recorded under the login that makes them.',
    );
    return 2;
  }

  const db = createDatabase({ connectionString: config.databaseUrl, applicationName: 'order-mail-ops' });
  let operator: string;
  try {
    operator = await whoIsActing(
      db,
      command.name !== 'status' && command.name !== 'list' && !isProviderStatus(command),
    );
  } catch (error) {
    await db.close();
    return reportFailure(io, error, config.databaseUrl);
  }
  if (command.name === 'hold') {
    // Postgres only: the hold is a row the dispatch fence reads; Temporal has no part in setting it.
    try {
      const held = await holdSends(db, { ...command, configured: configuredProviders(env) });
      io.out(command.json ? JSON.stringify(held, null, 2) : formatHold(held));
      // Not done while something dispatched before the hold may still be in flight: the operator must look.
      return held.inFlight.length === 0 && held.earlierWritesEnded ? 0 : 1;
    } catch (error) {
      return reportFailure(io, error, config.databaseUrl);
    } finally {
      await db.close();
    }
  }
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
      // What Temporal records of this client's requests (a start's, a cancel's) names the operator's login.
      identity: opsIdentity(operator),
    });
    try {
      const ctx: OpsContext = {
        db,
        client,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        uiBaseUrl: config.uiBaseUrl,
        operator,
        configured: configuredProviders(env),
      };
      if (command.name === 'bulk') return await bulk(ctx, command, io);
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

/** Renders an order's mail with the worker's settings; no act, no Temporal, nothing sent. */
async function preview(
  command: { orderId: string; json: boolean },
  env: Record<string, string | undefined>,
  io: CliIo,
): Promise<number> {
  let settings: PreviewSettings;
  try {
    settings = loadPreviewSettings(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(error.message);
    return 2;
  }
  const db = createDatabase({
    connectionString: settings.databaseUrl,
    applicationName: 'order-mail-ops preview',
  });
  try {
    let templates: MailTemplates;
    try {
      // As at the worker's start: the order contract's extra columns are fields the templates may name.
      const contract = await checkOrderContract(db);
      templates = loadMailTemplates(settings.templateDir, mailFieldsWith(contract.extras));
    } catch (error) {
      if (!(error instanceof MailTemplateError) && !(error instanceof OrderContractError)) throw error;
      io.err(error.message);
      return 2;
    }
    const rendered = await previewOrderMail(db, command.orderId, settings.identity, templates);
    io.out(command.json ? JSON.stringify(rendered, null, 2) : formatPreview(rendered));
    return 0;
  } catch (error) {
    if (error instanceof MailRenderError) {
      io.err(`Cannot render (${error.code}): ${error.message}`);
      return 1;
    }
    return reportFailure(io, error, settings.databaseUrl);
  } finally {
    await db.close();
  }
}

/** A refusal says which rule refused; an unreachable Postgres is named by its address and OPS_DATABASE_URL (no password). */
function reportFailure(io: CliIo, error: unknown, databaseUrl: string): number {
  if (error instanceof OpsRefusal) {
    io.err(`Refused (${error.code}): ${error.message}`);
    return 1;
  }
  io.err(`Failed: ${describePostgresFailure(error, databaseUrl, 'OPS_DATABASE_URL')}`);
  return 1;
}

/** The Temporal client identity of the ops CLI run by `login`: what the history shows of who acted. */
export function opsIdentity(login: string): string {
  return `order-mail-ops ${login}@${os.hostname()}`;
}

function isProviderStatus(command: OpsCommand): boolean {
  return command.name === 'provider' && command.provider.act === 'status';
}

/**
 * The login this CLI acts as; an acting command is refused first when it may not record an act, or a retry
 * would reset the workflow and fail to write who did it.
 */
async function whoIsActing(db: Database, acts: boolean): Promise<string> {
  const { rows } = await db.query<{ login: string; mayAct: boolean }>(
    `SELECT session_user AS login,
            to_regclass('order_mail_operator_acts') IS NOT NULL
              AND has_table_privilege('order_mail_operator_acts', 'INSERT') AS "mayAct"`,
  );
  const { login, mayAct } = rows[0]!;
  if (acts && !mayAct) {
    throw new OpsRefusal(
      'NOT_AN_OPERATOR',
      `The database login ${login} may not record operator acts, so nothing was done. Run npm run ops with ` +
        'OPS_DATABASE_URL set to your own login, a member of order_mail_operators (docs/operating.md, "Who you are").',
    );
  }
  return login;
}

/** A dry run prints its selection; a run prints a line per order as it goes, and exits 1 if any was refused. */
async function bulk(
  ctx: OpsContext,
  command: Extract<OpsCommand, { name: 'bulk' }>,
  io: CliIo,
): Promise<number> {
  const json = (value: unknown) => JSON.stringify(value, null, 2);
  if (command.bulk.act === 'dry-run') {
    const dry = await dryRunBulkAct(ctx, command.bulk);
    io.out(command.json ? json(dry) : formatBulkDryRun(dry));
    return 0;
  }
  const result = await runBulkAct(ctx, {
    id: command.bulk.id,
    // With --json, stdout carries only the result; the progress goes to stderr.
    onProgress: (progress) => {
      const line = formatBulkProgress(progress);
      if (command.json) io.err(line);
      else io.out(line);
    },
  });
  io.out(command.json ? json(result) : formatBulkRun(result));
  return result.refused.length === 0 ? 0 : 1;
}

async function run(
  ctx: OpsContext,
  command: Exclude<OpsCommand, { name: 'help' | 'provider' | 'preview' | 'hold' | 'bulk' }>,
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
    case 'resume': {
      const resumed = await resumeSends(ctx, command);
      return command.json ? json(resumed) : formatResume(resumed);
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
