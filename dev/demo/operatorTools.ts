// The hands of the operator-chaos run: each act exactly as an operator does it. Workflow cancel through the
// Temporal client API (what the Web UI's Cancel calls), terminate and both resets through the `temporal` CLI,
// the send activity's pause / unpause / reset / update-options through the `temporal activity` commands, and
// retry / resolve through our own operator CLI's entry point (src/cli/ops.ts's main, as `npm run ops` runs it).
// Every call has a deadline. What an act did is returned, never thrown: the report counts refusals and failures.
import { execFile } from 'node:child_process';
import type { Client } from '@temporalio/client';
import { main as opsMain } from '../../src/cli/ops';
import { findTemporalCli } from '../devtools/findTemporalCli';

/** Every act the operator chaos performs (the report counts each). */
export const OPERATOR_ACTS = [
  'workflow-cancel',
  'workflow-terminate',
  'workflow-reset-first',
  'workflow-reset-last',
  'activity-pause',
  'activity-unpause',
  'activity-reset',
  'activity-update-options',
  'ops-retry',
  'ops-resolve-sent',
  'ops-resolve-failed',
] as const;
export type OperatorActName = (typeof OPERATOR_ACTS)[number];

/** How an act ended: done; refused by the product (a typed refusal, say SEND_IN_FLIGHT); or failed (an error). */
export type ActOutcome =
  | { result: 'done'; detail: string | null; output?: unknown }
  | { result: 'refused'; detail: string; message?: string }
  | { result: 'failed'; detail: string };

export interface OperatorToolsOptions {
  client: Client;
  address: string;
  namespace: string;
  taskQueue: string;
  databaseUrl: string;
  uiUrl: string | null;
  operator: string;
}

/** Seconds the CLI may take for one command; the process gets a few more before it is killed. */
const CLI_TIMEOUT_S = 20;
const OPS_TIMEOUT_MS = 30_000;

export interface OperatorTools {
  cancel(workflowId: string, runId: string): Promise<ActOutcome>;
  terminate(workflowId: string, runId: string): Promise<ActOutcome>;
  reset(workflowId: string, runId: string, to: 'FirstWorkflowTask' | 'LastWorkflowTask'): Promise<ActOutcome>;
  activity(
    command: 'pause' | 'unpause' | 'reset',
    target: { workflowId: string; runId: string; activityId: string },
  ): Promise<ActOutcome>;
  raiseMaximumAttempts(
    target: { workflowId: string; runId: string; activityId: string },
    maximumAttempts: number,
  ): Promise<ActOutcome>;
  opsRetry(orderId: string, reason: string): Promise<ActOutcome>;
  opsResolve(orderId: string, as: 'sent' | 'failed', reason: string): Promise<ActOutcome>;
}

export function createOperatorTools(options: OperatorToolsOptions): OperatorTools {
  const cli = findTemporalCli();
  if (cli === null)
    throw new Error('operator chaos needs the temporal CLI (bash scripts/setup.sh installs it)');
  const identity = `operator-chaos ${options.operator}`;

  const temporal = (args: string[]): Promise<ActOutcome> =>
    new Promise((resolve) => {
      const argv = [
        ...args,
        '--address',
        options.address,
        '--namespace',
        options.namespace,
        '--command-timeout',
        `${CLI_TIMEOUT_S}s`,
        '--output',
        'json',
        '--color',
        'never',
      ];
      execFile(
        cli,
        argv,
        { timeout: (CLI_TIMEOUT_S + 5) * 1000, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error === null) {
            resolve({ result: 'done', detail: null, output: stdout });
            return;
          }
          // The CLI's error line: time=… level=ERROR msg="failed to …: <the server's words>".
          const text = (stderr || error.message).trim().split('\n').slice(-3).join(' ');
          const said = /msg="([^"]*)"/.exec(text)?.[1] ?? text;
          resolve(
            isRefusal(said)
              ? { result: 'refused', detail: refusalOf(said), message: said }
              : { result: 'failed', detail: said },
          );
        },
      );
    });

  const ops = async (argv: string[]): Promise<ActOutcome> => {
    const out: string[] = [];
    const err: string[] = [];
    const env = {
      // The demo's admin login stands in for an operator's own (docs/operating.md, "Who you are").
      OPS_DATABASE_URL: options.databaseUrl,
      TEMPORAL_ADDRESS: options.address,
      TEMPORAL_NAMESPACE: options.namespace,
      TEMPORAL_TASK_QUEUE: options.taskQueue,
      TEMPORAL_UI_URL: options.uiUrl ?? 'http://127.0.0.1:8233',
    };
    const io = { out: (text: string) => out.push(text), err: (text: string) => err.push(text) };
    let timer: NodeJS.Timeout | undefined;
    try {
      const code = await Promise.race([
        opsMain([...argv, '--json'], env, io),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`npm run ops did not answer in ${OPS_TIMEOUT_MS} ms`)),
            OPS_TIMEOUT_MS,
          );
        }),
      ]);
      if (code === 0) return { result: 'done', detail: null, output: parseJson(out.join('\n')) };
      const message = err.join('\n');
      // The CLI's contract with its reader: "Refused (CODE): why", exit 1, nothing changed.
      const refused = /^Refused \(([A-Z_]+)\)/.exec(message);
      if (refused) return { result: 'refused', detail: refused[1]!, message: message.split('\n')[0] };
      return { result: 'failed', detail: message.split('\n')[0] ?? `exit ${code}` };
    } catch (error) {
      return { result: 'failed', detail: error instanceof Error ? error.message : String(error) };
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    async cancel(workflowId, runId) {
      try {
        await options.client.workflow.getHandle(workflowId, runId).cancel();
        return { result: 'done', detail: null };
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        return isRefusal(text)
          ? { result: 'refused', detail: refusalOf(text), message: text }
          : { result: 'failed', detail: text };
      }
    },
    terminate: (workflowId, runId) =>
      temporal([
        'workflow',
        'terminate',
        '-w',
        workflowId,
        '-r',
        runId,
        '--reason',
        'operator chaos: terminate',
      ]),
    reset: (workflowId, runId, to) =>
      temporal([
        'workflow',
        'reset',
        '-w',
        workflowId,
        '-r',
        runId,
        '-t',
        to,
        '--reason',
        `operator chaos: reset to ${to}`,
      ]),
    activity: (command, target) =>
      temporal([
        'activity',
        command,
        '-w',
        target.workflowId,
        '-r',
        target.runId,
        '-a',
        target.activityId,
        ...(command === 'reset' ? [] : ['--identity', identity]),
      ]),
    raiseMaximumAttempts: (target, maximumAttempts) =>
      temporal([
        'activity',
        'update-options',
        '-w',
        target.workflowId,
        '-r',
        target.runId,
        '-a',
        target.activityId,
        '--retry-maximum-attempts',
        String(maximumAttempts),
      ]),
    opsRetry: (orderId, reason) => ops(['retry', orderId, '--reason', reason]),
    opsResolve: (orderId, as, reason) => ops(['resolve', orderId, '--as', as, '--reason', reason]),
  };
}

/**
 * Temporal's answers that mean "not now, nothing changed": the run is already closed, the activity is gone or
 * not in a state for this. The operator raced the order's own progress; the report counts these as refused.
 */
function isRefusal(text: string): boolean {
  return REFUSALS.some(([pattern]) => pattern.test(text));
}

function refusalOf(text: string): string {
  return REFUSALS.find(([pattern]) => pattern.test(text))?.[1] ?? 'REFUSED';
}

const REFUSALS: [RegExp, string][] = [
  // The send finished before the act reached it.
  [/can't find pending activity/i, 'ACTIVITY_GONE'],
  // The run closed first (it completed, or another act closed it).
  [/workflow execution already completed/i, 'RUN_CLOSED'],
  // A reset of a run whose first workflow task has not completed: there is no point to reset to yet.
  [/workflow task finish id must be/i, 'NOTHING_TO_RESET'],
  [/workflow not found|workflow execution not found/i, 'NOT_FOUND'],
];

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
