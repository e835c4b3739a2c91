import { createClaimOrderMail } from './claimOrderMail';
import type { ActivityDependencies } from './dependencies';
import { createReadTimeSinceFirstDispatch } from './readTimeSinceFirstDispatch';
import { createRecordOrderMailOutcome } from './recordOrderMailOutcome';
import { createSendOrderMail } from './sendOrderMail';

export type { ActivityDependencies } from './dependencies';
export type { ClaimResult } from './claimOrderMail';
export type { SendOrderMailAccepted, SendOrderMailInput } from './sendOrderMail';
export type { RecordOrderMailOutcomeInput } from './recordOrderMailOutcome';
export type { TimeSinceFirstDispatch } from './readTimeSinceFirstDispatch';

/** The order-mail activities over their dependencies. Workflows see only the type of this object. */
export function createActivities(deps: ActivityDependencies) {
  return {
    claimOrderMail: createClaimOrderMail(deps),
    sendOrderMail: createSendOrderMail(deps),
    recordOrderMailOutcome: createRecordOrderMailOutcome(deps),
    readTimeSinceFirstDispatch: createReadTimeSinceFirstDispatch(deps),
  };
}

export type OrderMailActivities = ReturnType<typeof createActivities>;
