// src/workflows/showOrderMailState.ts without its upserts, for BENCH_SKIP_SEARCH_ATTRIBUTES only.
export { ORDER_MAIL_ATTRIBUTES_AT_START } from '../../../src/shared/workflowContract';

export function showOrderMailState(_shown: unknown): void {}

export function showNoClaim(): void {}
