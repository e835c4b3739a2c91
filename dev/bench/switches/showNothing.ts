// src/workflows/showOrderMailState.ts without its upserts, for BENCH_SKIP_SEARCH_ATTRIBUTES only.
import type { LogOutcome } from '../../../src/shared/mailOutcome';
import type { OrderMailStateValue } from '../../../src/shared/orderMailSearchAttributes';

export { ORDER_MAIL_ATTRIBUTES_AT_START } from '../../../src/shared/workflowContract';

export function stateShownFor(
  rowState: 'sending' | 'sent' | 'failed',
  outcome: LogOutcome | null,
): OrderMailStateValue {
  return rowState === 'sent' && outcome === 'unknown' ? 'unknown' : rowState;
}

export function showOrderMailState(_shown: unknown): void {}

export function showNoClaim(): void {}
