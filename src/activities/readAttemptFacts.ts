import { readAttemptFacts, type AttemptFacts } from '../db/orderMailRecord';
import type { ActivityDependencies } from './dependencies';

export type { AttemptFacts };

/**
 * What the workflow needs to decide an unknown outcome (src/shared/unknownOutcome.ts): whether the attempt
 * passed the dispatch fence, and how long ago its idempotency key was first sent, on Postgres's clock. The
 * workflow reads no clock or database itself; as an activity result this is recorded in history, so a replay
 * decides exactly as the original run did. Read-only, so Temporal may retry it freely.
 */
export function createReadAttemptFacts(deps: ActivityDependencies) {
  return async function readAttemptOutcomeFacts(input: {
    orderId: string;
    claimToken: string;
    attempt: number;
  }): Promise<AttemptFacts> {
    return readAttemptFacts(deps.db, input);
  };
}
