// Temporal Cloud's published list price per Action, to put a price on one order's Actions. Read on the date
// below from the pricing page; it changes, so a bench run reports the rate it used beside the figure.
export const ACTION_LIST_PRICE = {
  usdPerMillionActions: 50,
  source: 'https://docs.temporal.io/cloud/pricing',
  readOn: '2026-12-01',
  terms:
    'Pay-As-You-Go list rate: $50 per million Actions (the Developer plan at any volume; the first 5M a month ' +
    'on Business and above, whose volume tiers go down to $25 per million between 100M and 200M)',
} as const;

/** US dollars per million orders that each cost `actionsPerOrder` Actions, at the list rate. */
export function usdPerMillionOrders(actionsPerOrder: number): number {
  return actionsPerOrder * ACTION_LIST_PRICE.usdPerMillionActions;
}

/** The targets of issue 16 for an accepted order. */
export const ACCEPTED_ACTIONS_TARGET = 5;
export const ACCEPTED_ACTIONS_STRETCH_TARGET = 4;
