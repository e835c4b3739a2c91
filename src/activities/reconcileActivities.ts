// The sweep's activities (docs/design.md §7); their names are the activity types in history.
import { createFindStuckMailClaims } from './findStuckMailClaims';
import type { ReconcileDependencies, SecondLookMail } from './reconcileTypes';
import { createSettleClosedRunClaim } from './settleStuckClaim';
import { createStartMailsForConfirmedOrders } from './startMailsForConfirmedOrders';

export * from './reconcileTypes';

export function createReconcileActivities(deps: ReconcileDependencies, mail: SecondLookMail) {
  return {
    startMailsForConfirmedOrders: createStartMailsForConfirmedOrders(deps, mail),
    findStuckMailClaims: createFindStuckMailClaims(deps, mail),
    settleClosedRunClaim: createSettleClosedRunClaim(deps, mail),
  };
}

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
