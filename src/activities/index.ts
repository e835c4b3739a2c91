import { createClaimOrderMail } from './claimOrderMail';
import type { ActivityDependencies } from './dependencies';
import { createReadAttemptFacts } from './readAttemptFacts';
import { createRecordOrderMailOutcome } from './recordOrderMailOutcome';
import { createSendOrderMail } from './sendOrderMail';
import { createSettleVerifiedOrphan } from './settleVerifiedOrphan';
import { createVerifyOrderMail } from './verifyOrderMail';

export type { ActivityDependencies } from './dependencies';
export type { ClaimOrderMailInput, ClaimResult } from './claimOrderMail';
export type { SendOrderMailInput } from './sendOrderMail';
export type { RecordOrderMailOutcomeInput } from './recordOrderMailOutcome';
export type { AttemptFacts } from './readAttemptFacts';
export type { VerificationWait, VerifyOrderMailInput, VerifyOrderMailResult } from './verifyOrderMail';
export type { SettleVerifiedOrphanInput, SettleVerifiedOrphanResult } from './settleVerifiedOrphan';

/** The order-mail activities over their dependencies. Workflows see only the type of this object. */
export function createActivities(deps: ActivityDependencies) {
  return {
    claimOrderMail: createClaimOrderMail(deps),
    sendOrderMail: createSendOrderMail(deps),
    readAttemptOutcomeFacts: createReadAttemptFacts(deps),
    recordOrderMailOutcome: createRecordOrderMailOutcome(deps),
    verifyOrderMail: createVerifyOrderMail(deps),
    settleVerifiedOrphanAttempt: createSettleVerifiedOrphan(deps),
  };
}

export type OrderMailActivities = ReturnType<typeof createActivities>;
