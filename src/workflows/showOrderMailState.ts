// What the Web UI shows about an order's mail: the search attributes follow every transition of the log row,
// so operators can filter on them (docs/operating.md). Each upsert is a billable Action on Temporal Cloud and
// a visibility write on any server, so the workflow upserts only what really changes: an order started by
// startOrderConfirmationMail already carries the state of its first claim (ORDER_MAIL_ATTRIBUTES_AT_START,
// free as part of the start), and an accepted mail then costs one upsert, at its outcome (docs/benchmarks.md).
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { LogOutcome } from '../shared/mailOutcome';
import {
  OrderMailAttempts,
  OrderMailHttpStatus,
  OrderMailOutcome,
  OrderMailState,
  type OrderMailStateValue,
} from '../shared/orderMailSearchAttributes';

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

// What a start gives the run: the client's contract (src/shared/workflowContract.ts).
export { ORDER_MAIL_ATTRIBUTES_AT_START } from '../shared/workflowContract';

export function showOrderMailState(shown: OrderMailStateShown): void {
  const updates: SearchAttributeUpdatePair[] = [{ key: OrderMailState, value: shown.state }];
  if (shown.outcome !== undefined) updates.push({ key: OrderMailOutcome, value: shown.outcome });
  if (shown.attempts !== undefined) updates.push({ key: OrderMailAttempts, value: shown.attempts });
  if (shown.httpStatus !== undefined) updates.push({ key: OrderMailHttpStatus, value: shown.httpStatus });
  upsertChanged(updates);
}

/**
 * A run that ends without holding a claim (the order does not exist, another workflow holds it) shows no
 * state: what the start request gave would otherwise say `sending` on a closed run, which reads as stuck.
 */
export function showNoClaim(): void {
  upsertChanged([
    { key: OrderMailState, value: null },
    { key: OrderMailAttempts, value: null },
  ]);
}

/** Upserts only the attributes whose value differs from what the run shows now; nothing if none does. */
function upsertChanged(updates: SearchAttributeUpdatePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = updates.filter(
    // null removes an attribute: a change only if it is there. Keyword and Int values compare as they are.
    (update) => (current.get(update.key) ?? null) !== (update.value ?? null),
  );
  if (changed.length > 0) upsertSearchAttributes(changed);
}
