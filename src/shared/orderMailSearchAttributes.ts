// The one list of search attributes; upserting an unregistered one hangs the run (docs/design.md §6).
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export type SearchAttributeKey = SearchAttributePair['key'];

/** The mail's state in one word (docs/operating.md, "What the Web UI shows"). */
export type OrderMailStateValue = 'sending' | 'sent' | 'failed' | 'unknown' | 'held';

export const OrderMailState = defineSearchAttributeKey('OrderMailState', SearchAttributeType.KEYWORD);
export const OrderMailOutcome = defineSearchAttributeKey('OrderMailOutcome', SearchAttributeType.KEYWORD);
export const OrderMailAttempts = defineSearchAttributeKey('OrderMailAttempts', SearchAttributeType.INT);
export const OrderMailHttpStatus = defineSearchAttributeKey('OrderMailHttpStatus', SearchAttributeType.INT);
/** On the sweep's run: orders it settled under a closed run (an alert). */
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
