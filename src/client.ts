// The order service's library (@order-confirmation-mail/client): no workflow or worker code, kept so by lint.
// The contract: docs/workflow-contract.md.
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
  addressSetting?: string;
  namespace?: string;
  env?: Record<string, string | undefined>;
  /** Joins the caller's trace; needs @temporalio/interceptors-opentelemetry and the caller's own OTel SDK. */
  tracing?: boolean;
  identity?: string;
}

/** The caller closes the connection. No answer within 10 s throws DependencyUnreachableError. */
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

async function tracingInterceptors(): Promise<ClientInterceptors> {
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry');
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

export type StartResult =
  | { status: 'started'; orderId: string; runId: string }
  /** Nothing was started; a closed run is never started again by this call (docs/workflow-contract.md). */
  | { status: 'already-started'; orderId: string; runId: string; runStatus: string }
  | { status: 'restarted'; orderId: string; runId: string; closedRunId: string; closedRunStatus: string };

export const RESTARTED_BY_MEMO = 'orderMailRestartedBy';

// What ALLOW_DUPLICATE_FAILED_ONLY reuses the id after; a completed run always made a log row.
const RESTARTABLE_STATUSES = new Set(['FAILED', 'TERMINATED', 'CANCELLED', 'TIMED_OUT']);

/** Another workflow type holds the order's id: the mail has NOT been started. Never read it as handled. */
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
 * Idempotent: call it after every commit; a second start reports 'already-started'. `restartClosedRun` is
 * the sweep's, which sees the log (docs/design.md §6, "Workflow id = order id").
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
  // The holder may vanish past retention between the refused start and the look; a restart may race another.
  for (let tries = 1; ; tries++) {
    try {
      const handle = await client.workflow.start(ORDER_MAIL_WORKFLOW_TYPE, {
        workflowId: orderId,
        taskQueue,
        args: [orderId],
        workflowIdReusePolicy: restarting === null ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY',
        workflowIdConflictPolicy: 'FAIL',
        // Part of the start, so no Action of their own.
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
