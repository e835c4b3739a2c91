// How any starter must start an order's mail (docs/workflow-contract.md). Free of workflow code: the client
// package imports it.
import type { SearchAttributePair } from '@temporalio/common';
import { OrderMailAttempts, OrderMailState } from './orderMailSearchAttributes';

export const ORDER_MAIL_WORKFLOW_TYPE = 'orderConfirmationMail';

export const DEFAULT_TASK_QUEUE = 'order-confirmation-mail';

/** Given at start (free), so the first claim need not upsert them; the workflow upserts only a difference. */
export const ORDER_MAIL_ATTRIBUTES_AT_START: readonly SearchAttributePair[] = [
  { key: OrderMailState, value: 'sending' },
  { key: OrderMailAttempts, value: 1 },
];

/** Ends a verification wait early (docs/design.md §6, "Early asks"); carries nothing. */
export const PROVIDER_EVENT_SIGNAL = 'orderMailProviderEvent';

/** Sent by `npm run ops -- resume` to runs in a hold wait (docs/design.md §6, "The hold wait"). */
export const SEND_HOLD_RESUME_SIGNAL = 'orderMailResume';
