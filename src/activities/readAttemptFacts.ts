import { readAttemptFacts, type AttemptFacts } from '../db/orderMailRecord';
import type { ActivityDependencies } from './dependencies';

export type { AttemptFacts };

/** The facts an unknown is decided by, as an activity result so a replay decides as the run did. Read-only. */
export function createReadAttemptFacts(deps: ActivityDependencies) {
  return async function readAttemptOutcomeFacts(input: {
    orderId: string;
    claimToken: string;
    attempt: number;
  }): Promise<AttemptFacts> {
    return readAttemptFacts(deps.db, input);
  };
}
