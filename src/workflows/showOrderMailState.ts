// What the Web UI shows about an order's mail: the workflow upserts its search attributes at every
// transition of the log row, so operators can filter on them (docs/operating.md).
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { LogOutcome } from '../shared/mailOutcome';
import {
  OrderMailAttempts,
  OrderMailHttpStatus,
  OrderMailOutcome,
  OrderMailState,
  type OrderMailStateValue,
} from '../shared/searchAttributes';

export interface OrderMailStateShown {
  state: OrderMailStateValue;
  // Each of these is left as it was when undefined, and removed when null (a new attempt has no outcome yet).
  outcome?: LogOutcome | null;
  attempts?: number;
  httpStatus?: number | null;
}

/** The one-word state an operator filters on, from the row's state and outcome (see OrderMailStateValue). */
export function stateShownFor(
  rowState: 'sending' | 'sent' | 'failed',
  outcome: LogOutcome | null,
): OrderMailStateValue {
  return rowState === 'sent' && outcome === 'unknown' ? 'unknown' : rowState;
}

export function showOrderMailState(shown: OrderMailStateShown): void {
  const updates: SearchAttributeUpdatePair[] = [{ key: OrderMailState, value: shown.state }];
  if (shown.outcome !== undefined) updates.push({ key: OrderMailOutcome, value: shown.outcome });
  if (shown.attempts !== undefined) updates.push({ key: OrderMailAttempts, value: shown.attempts });
  if (shown.httpStatus !== undefined) updates.push({ key: OrderMailHttpStatus, value: shown.httpStatus });
  upsertSearchAttributes(updates);
}
