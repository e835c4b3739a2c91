// The reconciliation sweep's activities (docs/design.md §7), one job per file: start the mail of confirmed
// orders that have no log row (startMailsForConfirmedOrders.ts), find claims stuck in 'sending' whose run is
// closed (findStuckMailClaims.ts), and settle each as the sweep decided (settleStuckClaim.ts). Registered on
// the same worker as the mail activities, by this sibling factory; the names are the activity types in history.
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
