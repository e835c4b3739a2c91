// The search attributes follow the row; each upsert is a billable Action, so only changes are upserted
// (docs/design.md §6, "Search attributes").
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
  // undefined: left as it was; null: removed.
  outcome?: LogOutcome | null;
  attempts?: number;
  httpStatus?: number | null;
}

/** The row as the Web UI shows it: a sent row of unknown outcome shows `unknown`. */
export function showRow(
  rowState: 'sending' | 'sent' | 'failed',
  outcome: LogOutcome | null | undefined,
  more: Omit<OrderMailStateShown, 'state' | 'outcome'> = {},
): void {
  showOrderMailState({
    state: rowState === 'sent' && outcome === 'unknown' ? 'unknown' : rowState,
    outcome,
    ...more,
  });
}

export function showOrderMailState(shown: OrderMailStateShown): void {
  const updates: SearchAttributeUpdatePair[] = [{ key: OrderMailState, value: shown.state }];
  if (shown.outcome !== undefined) updates.push({ key: OrderMailOutcome, value: shown.outcome });
  if (shown.attempts !== undefined) updates.push({ key: OrderMailAttempts, value: shown.attempts });
  if (shown.httpStatus !== undefined) updates.push({ key: OrderMailHttpStatus, value: shown.httpStatus });
  upsertChanged(updates);
}

/** A run that never held a claim shows no state: `sending` from the start would read as a send in flight. */
export function showNoClaim(): void {
  upsertChanged([
    { key: OrderMailState, value: null },
    { key: OrderMailAttempts, value: null },
  ]);
}

function upsertChanged(updates: SearchAttributeUpdatePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const changed = updates.filter(
    // null removes an attribute: a change only if it is there. Keyword and Int values compare as they are.
    (update) => (current.get(update.key) ?? null) !== (update.value ?? null),
  );
  if (changed.length > 0) upsertSearchAttributes(changed);
}
