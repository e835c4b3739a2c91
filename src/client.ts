// The library the order service imports: start one order's confirmation mail, idempotently, and look at it.
// Published as the @order-confirmation-mail/client package (packages/client): it imports no workflow code,
// only the contract (src/shared/workflowContract.ts), so the order service needs @temporalio/client and
// nothing of the worker. Lint keeps it so (eslint.config.mjs).
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type ClientInterceptors,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { DependencyUnreachableError, temporalTarget } from './config/connectionTargets';
import { loadTemporalConnectionConfig } from './config/temporalConnection';
import { parseOrderId } from './shared/orderId';
import {
  DEFAULT_TASK_QUEUE,
  ORDER_MAIL_ATTRIBUTES_AT_START,
  ORDER_MAIL_WORKFLOW_TYPE,
} from './shared/workflowContract';

export { DependencyUnreachableError } from './config/connectionTargets';
export { InvalidOrderIdError, parseOrderId } from './shared/orderId';
export { DEFAULT_TASK_QUEUE, ORDER_MAIL_WORKFLOW_TYPE } from './shared/workflowContract';

const CONNECT_TIMEOUT_S = 10;

export interface ConnectOptions {
  /** Overrides the address from the environment. */
  address?: string;
  /** What the overriding address came from, for the error when it cannot be reached. */
  addressSetting?: string;
  /** Overrides the namespace from the environment. */
  namespace?: string;
  /** Where the connection settings come from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Traces each start with Temporal's OpenTelemetry client interceptor, so the workers' spans (workflow,
   * activities, the provider request) join the caller's trace. Needs `@temporalio/interceptors-opentelemetry`
   * installed (an optional peer dependency of the client package) and the caller's own OpenTelemetry SDK
   * registered; this library registers none and exports nothing itself.
   */
  tracing?: boolean;
  /** The client identity Temporal records on this client's requests; default Temporal's (pid@host). */
  identity?: string;
}

/**
 * Connects to Temporal as the environment says (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, a TOML profile: src/config/temporalConnection.ts), by default localhost:7233 and namespace
 * `default`. The caller owns the connection: `await client.connection.close()` when done. A server that
 * does not answer within 10 s throws DependencyUnreachableError, naming the address and its setting.
 */
export async function connectOrderMailClient(options: ConnectOptions = {}): Promise<Client> {
  const settings = loadTemporalConnectionConfig(options.env ?? process.env);
  const address = options.address ?? settings.connectionOptions.address;
  const setting =
    options.address === undefined
      ? settings.addressSetting
      : (options.addressSetting ?? 'the address option');
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...settings.connectionOptions,
      address,
      connectTimeout: `${CONNECT_TIMEOUT_S} seconds`,
    });
  } catch (error) {
    throw new DependencyUnreachableError(temporalTarget(address, setting), error);
  }
  return new Client({
    connection,
    namespace: options.namespace ?? settings.namespace,
    ...(options.identity === undefined ? {} : { identity: options.identity }),
    ...(options.tracing === true ? { interceptors: await tracingInterceptors() } : {}),
  });
}

/** Loaded only when asked for: the order service that does not trace need not install it. */
async function tracingInterceptors(): Promise<ClientInterceptors> {
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry');
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

export type StartResult =
  | { status: 'started'; orderId: string; runId: string }
  /**
   * A run of the order's mail exists: open (runStatus RUNNING) or closed (COMPLETED, FAILED, TERMINATED,
   * CANCELLED, TIMED_OUT). Nothing was started, and a closed run is never started again by this call. A run
   * that starts before its order is visible waits for it (up to 5 minutes) and is RUNNING meanwhile. A
   * closed run may have closed before its first claim (its order did not appear within that wait, or it was
   * terminated): the reconciliation sweep, which can see the log, starts such an order again
   * (docs/operating.md).
   */
  | { status: 'already-started'; orderId: string; runId: string; runStatus: string }
  /** Only with `restartClosedRun`: the closed run it approved was followed by this new run. */
  | { status: 'restarted'; orderId: string; runId: string; closedRunId: string; closedRunStatus: string };

/** The memo key on a run started again after a closed run (its value says who started it). */
export const RESTARTED_BY_MEMO = 'orderMailRestartedBy';

// The closed statuses a run may be started again after: Temporal's ALLOW_DUPLICATE_FAILED_ONLY reuses the id
// after exactly these, never after a run that completed (which always made a log row).
const RESTARTABLE_STATUSES = new Set(['FAILED', 'TERMINATED', 'CANCELLED', 'TIMED_OUT']);

/**
 * The order's workflow id (= its order id) is held by a workflow of another type, open or closed: in a
 * shared namespace, some other process used the order id as its own workflow id. The order's mail has NOT
 * been started, and cannot be under this id until that workflow is gone (terminated and past retention, or
 * in another namespace). Never read it as "already handled".
 */
export class OrderMailWorkflowIdTakenError extends Error {
  override readonly name = 'OrderMailWorkflowIdTakenError';
  readonly code = 'ERR_ORDER_MAIL_WORKFLOW_ID_TAKEN';
  constructor(
    readonly workflowId: string,
    readonly workflowType: string,
    readonly runId: string,
    readonly status: string,
  ) {
    super(
      `Order ${workflowId}: its confirmation mail was NOT started. The workflow id ${JSON.stringify(workflowId)} is ` +
        `held by a workflow of type ${JSON.stringify(workflowType)} (run ${runId}, ${status}), not ` +
        `${ORDER_MAIL_WORKFLOW_TYPE}. Give that workflow another id or run it in another namespace; until then ` +
        'this order gets no mail.',
    );
  }
}

/**
 * Starts the confirmation mail of one order. Call it as often as you like (after each commit, on every
 * redelivered event): the workflow id is the order id, so a second start is reported as 'already-started'
 * (with the run's status, open or closed) instead of sending again. Throws InvalidOrderIdError, with nothing
 * started, for anything but an order id, and OrderMailWorkflowIdTakenError when a workflow of another type
 * holds the id.
 *
 * `restartClosedRun` is for a caller that can see the order's log row (the reconciliation sweep): asked about
 * a closed run that did not complete, it answers whether to start the order again (it made no log row). The
 * new run is started with ALLOW_DUPLICATE_FAILED_ONLY and carries RESTARTED_BY_MEMO. It cannot make a second
 * mail: it claims the row like any run, so whatever the closed run left (a late claim, a dispatched attempt)
 * is found by the claim's fences, and a run that completed is never followed by another.
 */
export async function startOrderConfirmationMail(
  client: Client,
  orderIdInput: unknown,
  options: {
    taskQueue?: string;
    restartClosedRun?: {
      by: string;
      approve: (closed: WorkflowExecutionDescription) => Promise<boolean>;
    };
  } = {},
): Promise<StartResult> {
  const orderId = parseOrderId(orderIdInput);
  const taskQueue = options.taskQueue ?? process.env.TEMPORAL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;
  let restarting: WorkflowExecutionDescription | null = null;
  // A few tries at most: the run that held the id may vanish (past retention) between the refused start and
  // the look at it, and the id is then free; a restart may race another start.
  for (let tries = 1; ; tries++) {
    try {
      const handle = await client.workflow.start(ORDER_MAIL_WORKFLOW_TYPE, {
        workflowId: orderId,
        taskQueue,
        args: [orderId],
        // A closed run is never started again by a plain call (an operator's Reset is the way to send again),
        // and a running one is not replaced. Beyond the namespace's retention, the Postgres log still dedupes.
        workflowIdReusePolicy: restarting === null ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY',
        workflowIdConflictPolicy: 'FAIL',
        // The Web UI's filters from the first moment, as part of the start (no Action of their own).
        typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
        ...(restarting === null ? {} : { memo: { [RESTARTED_BY_MEMO]: options.restartClosedRun!.by } }),
      });
      if (restarting !== null) {
        return {
          status: 'restarted',
          orderId,
          runId: handle.firstExecutionRunId,
          closedRunId: restarting.runId,
          closedRunStatus: restarting.status.name,
        };
      }
      return { status: 'started', orderId, runId: handle.firstExecutionRunId };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      const holder = await describeOrderConfirmationMail(client, orderId);
      if (holder === null && tries < 3) {
        restarting = null;
        continue;
      }
      if (holder === null) throw error;
      if (holder.type !== ORDER_MAIL_WORKFLOW_TYPE) {
        throw new OrderMailWorkflowIdTakenError(orderId, holder.type, holder.runId, holder.status.name);
      }
      const restart = options.restartClosedRun;
      if (
        restart !== undefined &&
        tries < 3 &&
        holder.runId !== restarting?.runId &&
        RESTARTABLE_STATUSES.has(holder.status.name) &&
        (await restart.approve(holder))
      ) {
        restarting = holder;
        continue;
      }
      return { status: 'already-started', orderId, runId: holder.runId, runStatus: holder.status.name };
    }
  }
}

/** The order's mail workflow as Temporal sees it, or null when there is none (never started, or past retention). */
export async function describeOrderConfirmationMail(
  client: Client,
  orderIdInput: unknown,
): Promise<WorkflowExecutionDescription | null> {
  const orderId = parseOrderId(orderIdInput);
  try {
    return await client.workflow.getHandle(orderId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}
