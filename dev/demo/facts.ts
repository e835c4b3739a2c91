// Reads the facts the report is built from, after the run: the log and its audit trail from Postgres, and each
// workflow's status from Temporal. What the sandbox received comes from dev/demo/mailTarget.ts.
import type { Client } from '@temporalio/client';
import type { Database } from '../../src/db/pool';
import type { AttemptFact, LogRowFact } from './report';

export async function readLogFacts(
  db: Database,
  orderIds: string[],
): Promise<{ rows: LogRowFact[]; attempts: AttemptFact[] }> {
  const rows = await db.query<LogRowFact>(
    `SELECT order_id::text AS "orderId", state, outcome, attempts, provider_message_id AS "providerMessageId"
       FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  const attempts = await db.query<AttemptFact>(
    `SELECT order_id::text AS "orderId", attempt, state, outcome, unknown_policy AS "unknownPolicy",
            dispatched_at IS NOT NULL AS dispatched
       FROM order_mail_attempts WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  return { rows: rows.rows, attempts: attempts.rows };
}

/** Workflow id → status name (COMPLETED, FAILED, RUNNING, TERMINATED, …) of every workflow on the task queue. */
export async function readWorkflowStatuses(
  client: Client,
  taskQueue: string,
): Promise<Record<string, string>> {
  const statuses: Record<string, string> = {};
  for await (const workflow of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) {
    statuses[workflow.workflowId] = workflow.status.name;
  }
  return statuses;
}

export async function countRunningWorkflows(
  client: Client,
  taskQueue: string,
): Promise<{ running: number; all: number }> {
  const [running, all] = await Promise.all([
    client.workflow.count(`TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`),
    client.workflow.count(`TaskQueue = "${taskQueue}"`),
  ]);
  return { running: running.count, all: all.count };
}
