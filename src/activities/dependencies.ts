import type { Database } from '../db/pool';
import type { MailIdentity } from '../mail/confirmationMail';
import type { MailSizeLimits } from '../mail/mailSizeLimits';
import type { MailTransport } from '../mail/types';
import type { OrderMailMetrics } from '../metrics/orderMailMetrics';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import type { ReadResetOfRun } from '../temporal/resetHistory';
import type { Verifier } from '../verification/verifier';

/** What the activities need, injected, so tests pass real pools or fakes through the same door. */
export interface ActivityDependencies {
  db: Database;
  mail: MailTransport;
  mailIdentity: MailIdentity;
  /** How large a mail may get (MAIL_MAX_ORDER_ITEMS, MAIL_MAX_RENDERED_BYTES); the defaults when absent. */
  mailLimits?: MailSizeLimits;
  settings: OrderMailWorkflowSettings;
  /** Written into the audit trail as `recorded_by`; the Temporal worker identity (pid@host) by default. */
  workerIdentity: string;
  /** The product's metrics (src/metrics); none when absent, as in most tests. */
  metrics?: OrderMailMetrics;
  /**
   * Reads from Temporal's history whether a reset started a run, so its claim records the reset as an operator
   * act (src/activities/resetAct.ts). The worker always passes one; absent, no reset act is written.
   */
  readResetOfRun?: ReadResetOfRun;
  /**
   * This deployment's identity in every send key (MAIL_DEPLOYMENT_ID, src/mail/idempotencyKey.ts), so another
   * system on the same provider account is never taken for this one. DEFAULT_DEPLOYMENT_ID when absent (tests).
   */
  deploymentId?: string;
  /** How the verify activity asks the provider (src/verification/verifier.ts); absent when nothing is verified. */
  verifier?: Verifier;
}
