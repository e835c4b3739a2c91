import { timeSinceFirstDispatch } from '../db/orderMailLog';
import type { ActivityDependencies } from './dependencies';

export interface TimeSinceFirstDispatch {
  /** On Postgres's clock; null when no attempt of the order ever dispatched. */
  sinceFirstDispatchMs: number | null;
}

/**
 * How long ago the order's first request went to the provider. The workflow needs it to know whether a retry
 * under the idempotency key would still fall inside the provider's window, and must not read a clock itself:
 * as an activity result it is recorded in history, so a replay decides exactly as the original run did.
 * Read-only, so Temporal may retry it freely.
 */
export function createReadTimeSinceFirstDispatch(deps: ActivityDependencies) {
  return async function readTimeSinceFirstDispatch(input: {
    orderId: string;
  }): Promise<TimeSinceFirstDispatch> {
    return { sinceFirstDispatchMs: await timeSinceFirstDispatch(deps.db, input.orderId) };
  };
}
