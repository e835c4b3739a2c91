// Gathers the facts the report is built from, after the run (gatherRunFacts): the log and its audit trail from
// Postgres, each workflow's runs from Temporal, what the sandbox received (dev/demo/mailTarget.ts), the inbox
// (inbox.ts), the webhook receiver's tables, and in the runs that have them the operators' log, the sweeps,
// the acts on the cluster with the tasks it redelivered (taskRedeliveries.ts), and the failover attempts.
import type { Client } from '@temporalio/client';
import { readSendOutageFacts, type OutageWindow } from '../sendOutage';
import type { Database } from '../../../src/db/pool';
import type { WebhookLiePosting } from '../../../packages/sandbox/src/webhookLies';
import { mayBeKept } from './webhookLieReport';
import type { ClusterChaos } from '../clusterChaos';
import type { Operators } from '../operators';
import type { RunOptions } from '../runOptions';
import type { Stack } from '../stack';
import type { RunSweeps } from '../sweep';
import type {
  AttemptFact,
  ChaosCounts,
  ClusterFacts,
  FailoverAttemptFact,
  LogRowFact,
  OperatorFacts,
  RunFact,
  RunFacts,
  StartCounts,
  WebhookFacts,
  WorkflowFacts,
} from './facts';
import { readInboxFacts } from './inbox';
import { readTaskRedeliveries } from './taskRedeliveries';

/** The order mail workflows only: the reconciliation sweep's runs share the task queue in some runs. */
const ORDER_WORKFLOW = 'WorkflowType = "orderConfirmationMail"';
/** The failover run's providers, in the order the workers try them (MAIL_PROVIDERS=postmark,mailgun). */
const FAILOVER_PRIMARY = 'postmark';

/** Every fact of a finished run, read once its orders are done (or its time is up). */
export async function gatherRunFacts(input: {
  options: RunOptions;
  db: Database;
  stack: Stack;
  client: Client;
  taskQueue: string;
  orderIds: string[];
  chaos: ChaosCounts;
  cluster: ClusterChaos | null;
  starts: StartCounts;
  elapsedMs: number;
  /** When the first order was started (Date.now()): every webhook posting of the run was signed after it. */
  startedAt: number;
  operators: Operators | null;
  sweeps: RunSweeps | null;
  /** --send-outage: its window once it ended; null otherwise (or when the run ended first). */
  sendOutage?: OutageWindow | null;
}): Promise<RunFacts> {
  const { mail, inbox } = input.stack;
  // What the sandbox accepted is taken before the inbox is read, so every mail counted here had its relay.
  const messages = mail.messages();
  const requests = mail.requests();
  const [log, workflows, inboxFacts, webhooks] = await Promise.all([
    readLogFacts(input.db, input.orderIds),
    readWorkflowFacts(input.client, input.taskQueue),
    inbox === null ? null : readInboxFacts(inbox, () => mail.relaysSettled()),
    readWebhookFacts(input.db, mail, input.orderIds, new Date(input.startedAt - 1_000)),
  ]);
  let operators: OperatorFacts | null = null;
  if (input.operators !== null) {
    operators = {
      acts: input.operators.log(),
      runs: workflows.runs,
      sweeps: await input.sweeps!.facts(),
    };
  }
  let cluster: ClusterFacts | null = null;
  if (input.stack.cluster !== null) {
    cluster = {
      acts:
        input.cluster?.counts() ??
        ({
          historyKills: 0,
          matchingKills: 0,
          frontendRestarts: 0,
          rollingRestarts: 0,
          rolledHosts: 0,
          serviceKillsOrRestarts: 0,
          failedActs: 0,
          acts: [],
        } satisfies ClusterFacts['acts']),
      redeliveries: await readTaskRedeliveries(input.client, Object.keys(workflows.statuses)),
      historyShards: input.stack.cluster.historyShards,
      shardsAtEnd: await input.stack.cluster.shardOwnership(),
    };
  }
  const { failover } = input.options;
  const lastMail = messages.reduce((last, message) => Math.max(last, Date.parse(message.receivedAt)), 0);
  const sendOutage =
    input.sendOutage == null
      ? null
      : await readSendOutageFacts(input.db, {
          window: input.sendOutage,
          orderIds: input.orderIds,
          lastMailAt: lastMail === 0 ? null : lastMail,
        });
  return {
    sendOutage,
    profile: input.options.profile,
    transport: mail.transport,
    policy: input.options.policy,
    verification: mail.verificationActivity(),
    orderIds: input.orderIds,
    ...log,
    messages,
    requests,
    workflows: workflows.statuses,
    inbox: inboxFacts,
    chaos: input.chaos,
    starts: input.starts,
    workers: input.options.workers,
    elapsedMs: input.elapsedMs,
    operators,
    webhooks,
    cluster,
    failover:
      failover === null
        ? null
        : {
            primary: FAILOVER_PRIMARY,
            outage: { atMs: failover.outageAtMs, forMs: failover.outageForMs },
            attempts: await readFailoverAttempts(input.db, input.orderIds),
          },
  };
}

async function readLogFacts(
  db: Database,
  orderIds: string[],
): Promise<{ rows: LogRowFact[]; attempts: AttemptFact[] }> {
  const rows = await db.query<LogRowFact>(
    `SELECT order_id::text AS "orderId", state, outcome, attempts, provider_message_id AS "providerMessageId",
            dispatched_at IS NOT NULL AS dispatched
       FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  const attempts = await db.query<AttemptFact>(
    `SELECT order_id::text AS "orderId", attempt, state, outcome, unknown_policy AS "unknownPolicy",
            dispatched_at IS NOT NULL AS dispatched, provider_message_id AS "providerMessageId", verification,
            resend_count AS "resendCount",
            to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "finishedAt"
       FROM order_mail_attempts WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  return { rows: rows.rows, attempts: attempts.rows };
}

/** The order mail workflows on the task queue: each one's newest run, and all its runs. */
async function readWorkflowFacts(client: Client, taskQueue: string): Promise<WorkflowFacts> {
  const seen: (RunFact & { workflowId: string })[] = [];
  for await (const workflow of client.workflow.list({
    query: `${ORDER_WORKFLOW} AND TaskQueue = "${taskQueue}"`,
  })) {
    seen.push({
      workflowId: workflow.workflowId,
      runId: workflow.runId,
      status: workflow.status.name,
      startedAt: workflow.startTime.toISOString(),
      closedAt: workflow.closeTime?.toISOString() ?? null,
    });
  }
  seen.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  const statuses: Record<string, string> = {};
  const runs: Record<string, RunFact[]> = {};
  for (const { workflowId, ...run } of seen) {
    statuses[workflowId] ??= run.status;
    (runs[workflowId] ??= []).push(run);
  }
  return { statuses, runs };
}

/** How many of the run's order workflows there are, and how many still run: the runner's progress. */
export async function countRunningWorkflows(
  client: Client,
  taskQueue: string,
): Promise<{ running: number; all: number }> {
  const [running, all] = await Promise.all([
    client.workflow.count(`${ORDER_WORKFLOW} AND TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`),
    client.workflow.count(`${ORDER_WORKFLOW} AND TaskQueue = "${taskQueue}"`),
  ]);
  return { running: running.count, all: all.count };
}

/** Under --lying-provider with webhooks: what the sandbox posted, the receiver answered, and its tables hold. */
async function readWebhookFacts(
  db: Database,
  mail: Stack['mail'],
  orderIds: string[],
  since: Date,
): Promise<WebhookFacts | null> {
  const postings = await mail.webhookPostings();
  if (postings === null || mail.provider === null) return null;
  const rows = await readWebhookRows(db, {
    provider: mail.provider,
    orderIds,
    since,
    refusedTokens: refusedLieTokens(postings.liePostings),
  });
  return { ...postings, rows };
}

/** The tokens of lie postings the receiver did not take, less any a taken posting carried (a replay's first). */
export function refusedLieTokens(postings: WebhookLiePosting[]): string[] {
  const taken = new Set(
    postings
      .filter(
        (posting) =>
          posting.answer === 'skipped' || posting.answer === 'believed' || posting.answer === 'kept',
      )
      .map((posting) => posting.token),
  );
  const refused = postings
    .filter((posting) => (posting.answer === 'refused' || posting.answer === 'failed') && !mayBeKept(posting))
    .map((posting) => posting.token)
    .filter((token): token is string => token !== null && !taken.has(token));
  return [...new Set(refused)];
}

/**
 * What the webhook receiver wrote for the run: the event rows for its orders (every event a lie could get
 * stored names one of them), the replay tokens signed since it started, and which of `refusedTokens` (lie
 * postings the receiver did not take) are kept. Read as the database's owner, after the run.
 */
async function readWebhookRows(
  db: Database,
  input: { provider: string; orderIds: string[]; since: Date; refusedTokens: string[] },
): Promise<WebhookFacts['rows']> {
  const events = await db.query<{ id: string }>(
    `SELECT provider_event_id AS id FROM order_mail_provider_events
      WHERE provider = $1 AND order_id = ANY($2::bigint[])`,
    [input.provider, input.orderIds],
  );
  const deliveries = await db.query<{ count: string }>(
    `SELECT count(*)::text AS count FROM order_mail_webhook_deliveries WHERE provider = $1 AND signed_at >= $2`,
    [input.provider, input.since],
  );
  const kept = await db.query<{ token: string }>(
    `SELECT token FROM order_mail_webhook_deliveries WHERE provider = $1 AND token = ANY($2::text[])`,
    [input.provider, input.refusedTokens],
  );
  return {
    storedEventIds: events.rows.map((row) => row.id),
    deliveryRows: Number(deliveries.rows[0]?.count ?? 0),
    refusedTokensStored: kept.rows.map((row) => row.token),
  };
}

/** Every attempt of the run's orders with the provider it went to and the claim's reason (--failover). */
async function readFailoverAttempts(db: Database, orderIds: string[]): Promise<FailoverAttemptFact[]> {
  const { rows } = await db.query<FailoverAttemptFact>(
    `SELECT order_id::text AS "orderId", attempt, resend_count AS "resendCount", provider, provider_choice AS choice,
            outcome, http_status AS "httpStatus", verification, error
       FROM order_mail_attempts WHERE order_id = ANY($1::bigint[]) ORDER BY order_id, attempt`,
    [orderIds],
  );
  return rows;
}
