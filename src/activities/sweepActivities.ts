// The sweep's activities (docs/design.md §7); their names are the activity types in history.
import { createFindOrphans } from './findOrphans';
import type { SweepDependencies, SecondLookMail } from './sweepTypes';
import { createSettleOrphan } from './settleOrphan';
import { createStartMailsForConfirmedOrders } from './startMailsForConfirmedOrders';

export * from './sweepTypes';

export function createSweepActivities(deps: SweepDependencies, mail: SecondLookMail) {
  return {
    startMailsForConfirmedOrders: createStartMailsForConfirmedOrders(deps, mail),
    findStuckMailClaims: createFindOrphans(deps, mail),
    settleClosedRunClaim: createSettleOrphan(deps, mail),
  };
}

export type SweepActivities = ReturnType<typeof createSweepActivities>;
