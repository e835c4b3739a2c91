// The custom search attributes the workflows upsert, for the Web UI's filters (docs/design.md §6). This is the one
// list: `npm run setup` registers it, the worker refuses to start without it, and the test harness registers
// it on its dev server. A workflow that upserts an attribute the namespace does not know hangs (its workflow
// task fails and is retried forever), so nothing may be upserted that is not listed here.
// Pure: imported by workflows.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

/** A typed search attribute key, named through the SDK's public types (its own name lives under lib/). */
export type SearchAttributeKey = SearchAttributePair['key'];

/**
 * What an operator needs to know about an order's mail, in one word:
 * - `sending`: claimed, the send is under way (or its run was terminated mid-send: the reconciliation sweep
 *   settles the row, while a terminated run's attribute keeps saying `sending`);
 * - `sent`: the provider accepted it;
 * - `failed`: definitely not accepted (a rejection, or not sent); a Running workflow will retry by itself, a
 *   Failed one waits for an operator to fix the cause and reset;
 * - `unknown`: it may have been accepted (the connection died after the request), and the policy settled it.
 *   An operator may check with the provider and `resolve` it;
 * - `held`: an operator holds sends (`npm run ops -- hold`); the run made no request and waits for `resume`.
 */
export type OrderMailStateValue = 'sending' | 'sent' | 'failed' | 'unknown' | 'held';

export const OrderMailState = defineSearchAttributeKey('OrderMailState', SearchAttributeType.KEYWORD);
/** The row's outcome: accepted, rejected, not_sent or unknown (with OrderMailState telling how it was settled). */
export const OrderMailOutcome = defineSearchAttributeKey('OrderMailOutcome', SearchAttributeType.KEYWORD);
/** How many times the mail was claimed (attempts of the log row). */
export const OrderMailAttempts = defineSearchAttributeKey('OrderMailAttempts', SearchAttributeType.INT);
/** The Mail API's HTTP status of the last attempt, when it answered (e.g. 422 for a bad address). */
export const OrderMailHttpStatus = defineSearchAttributeKey('OrderMailHttpStatus', SearchAttributeType.INT);
/**
 * Set by the reconciliation sweep on its own run: orders whose row it found stuck in `sending` under a closed
 * run (terminated, or cancelled without cleanup), and settled. An alert: someone ended a run mid-attempt.
 */
export const OrderMailStuckOrders = defineSearchAttributeKey(
  'OrderMailStuckOrders',
  SearchAttributeType.KEYWORD_LIST,
);

export const ORDER_MAIL_SEARCH_ATTRIBUTES: readonly SearchAttributeKey[] = [
  OrderMailState,
  OrderMailOutcome,
  OrderMailAttempts,
  OrderMailHttpStatus,
  OrderMailStuckOrders,
];
