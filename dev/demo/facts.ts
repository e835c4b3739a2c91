// Reads the facts the report is built from, after the run: the log and its audit trail from Postgres, and each
// workflow's status from Temporal. What the sandbox received comes from dev/demo/mailTarget.ts.
import type { Client } from '@temporalio/client';
import type { Database } from '../../src/db/pool';
import type { AttemptFact, LogRowFact } from './runFacts';

/** The order mail workflows only: the reconciliation sweep's runs share the task queue in some runs. */
const ORDER_WORKFLOW = 'WorkflowType = "orderConfirmationMail"';

export async function readLogFacts(
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

/** One run of an order's workflow, as Temporal lists it. */
export interface RunFact {
  runId: string;
  status: string;
  startedAt: string;
  /** Null while the run is open. */
  closedAt: string | null;
}

export interface WorkflowFacts {
  /** Workflow id → status name (COMPLETED, FAILED, RUNNING, TERMINATED, …) of its newest run. */
  statuses: Record<string, string>;
  /** Workflow id → all its runs, newest first (a reset leaves the run it replaced TERMINATED). */
  runs: Record<string, RunFact[]>;
}

/** The order mail workflows on the task queue: each one's newest run, and all its runs. */
export async function readWorkflowFacts(client: Client, taskQueue: string): Promise<WorkflowFacts> {
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

/** Workflow id → status name of the newest run of every order mail workflow on the task queue. */
export async function readWorkflowStatuses(
  client: Client,
  taskQueue: string,
): Promise<Record<string, string>> {
  return (await readWorkflowFacts(client, taskQueue)).statuses;
}

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

/**
 * What the webhook receiver wrote for the run: the event rows for its orders (every event a lie could get
 * stored names one of them), the replay tokens signed since it started, and which of `refusedTokens` (lie
 * postings the receiver did not take) are kept. Read as the database's owner, after the run.
 */
export async function readWebhookRows(
  db: Database,
  input: { provider: string; orderIds: string[]; since: Date; refusedTokens: string[] },
): Promise<{ storedEventIds: string[]; deliveryRows: number; refusedTokensStored: string[] }> {
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
