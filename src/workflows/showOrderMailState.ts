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
  // undefined: left as it was; null: removed.
  state: OrderMailStateValue | null;
  outcome?: LogOutcome | null;
  attempts?: number | null;
  httpStatus?: number | null;
}

/** The row as the Web UI shows it: a sent row of unknown outcome shows `unknown`. */
export function showOrderMailState(shown: OrderMailStateShown): void {
  const state = shown.state === 'sent' && shown.outcome === 'unknown' ? 'unknown' : shown.state;
  const updates: SearchAttributeUpdatePair[] = [{ key: OrderMailState, value: state }];
  if (shown.outcome !== undefined) updates.push({ key: OrderMailOutcome, value: shown.outcome });
  if (shown.attempts !== undefined) updates.push({ key: OrderMailAttempts, value: shown.attempts });
  if (shown.httpStatus !== undefined) updates.push({ key: OrderMailHttpStatus, value: shown.httpStatus });
  const current = workflowInfo().typedSearchAttributes;
  const changed = updates.filter(
    // null removes an attribute: a change only if it is there. Keyword and Int values compare as they are.
    (update) => (current.get(update.key) ?? null) !== (update.value ?? null),
  );
  if (changed.length > 0) upsertSearchAttributes(changed);
}

/** A run that never held a claim shows no state: `sending` from the start would read as a send in flight. */
export function showNoClaim(): void {
  showOrderMailState({ state: null, attempts: null });
}
