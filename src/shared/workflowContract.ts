// How an order's mail is started, as the client library (src/client.ts, the @order-confirmation-mail/client
// package) and any other starter must do it (docs/workflow-contract.md). Pure and free of workflow code: the
// order service installs the client, and the client must not pull in @temporalio/workflow or the worker.
// test/client/workflowContract.test.ts holds these names to the workflow and the worker's defaults.
import type { SearchAttributePair } from '@temporalio/common';
import { OrderMailAttempts, OrderMailState } from './orderMailSearchAttributes';

/** The workflow type the worker registers: the name of the function in src/workflows/orderConfirmationMail.ts. */
export const ORDER_MAIL_WORKFLOW_TYPE = 'orderConfirmationMail';

/** The task queue the workers poll unless TEMPORAL_TASK_QUEUE says otherwise. */
export const DEFAULT_TASK_QUEUE = 'order-confirmation-mail';

/**
 * The search attributes a start gives the run (free as part of the start): the state of its first claim,
 * which the workflow then does not upsert again. A run whose claim says otherwise upserts the difference; one
 * started without them (another client, the CLI) upserts them at its claim.
 */
export const ORDER_MAIL_ATTRIBUTES_AT_START: readonly SearchAttributePair[] = [
  { key: OrderMailState, value: 'sending' },
  { key: OrderMailAttempts, value: 1 },
];

/**
 * The signal a worker sends an order's run when a provider webhook event of the send it has in flight was
 * stored (src/verification/earlyLookups.ts): the run's verification asks the provider's lookup now instead of
 * at the end of its settle delay. It carries nothing and settles nothing: the lookup decides.
 */
export const PROVIDER_EVENT_SIGNAL = 'orderMailProviderEvent';

/**
 * The signal `npm run ops -- resume` sends each run waiting out a hold (src/ops/sendHold.ts): claim again now
 * instead of at the end of the run's fallback timer. It carries nothing; the dispatch fence decides.
 */
export const SEND_HOLD_RESUME_SIGNAL = 'orderMailResume';
