// One failure vocabulary (STYLE.md): the ApplicationFailure type names that activities throw and the workflow
// branches on. Branch on `failure.type`, never on class names: those do not survive serialization. The send's
// failures are built with the outcome they carry, in src/shared/sendOutcome.ts.
// Pure: imported by workflows and activities.

export const FailureType = {
  /** The mail API definitely refused this request, for good (a 4xx and the like). Thrown by the send. */
  MailRejected: 'MailRejected',
  /** The request definitely did not reach the provider, or was refused for now (408, 429, 503, refused). */
  MailNotSent: 'MailNotSent',
  /** The request may have been accepted: the connection died after it started, a 5xx, a timeout. */
  MailOutcomeUnknown: 'MailOutcomeUnknown',
  /** The claim is no longer this attempt's (an operator moved the row): the send made no request. */
  ClaimLost: 'ClaimLost',
  /**
   * Refused before any request: the order cannot be mailed as it is (its recipient is not one plain address,
   * or it is larger than the configured limits). Permanent: an operator fixes the order, then resets.
   */
  MailRefused: 'MailRefused',
  /**
   * Thrown by the claim, before anything is written: the order's mail is bound to a provider this worker is
   * not configured for (removed from MAIL_PROVIDERS), because an earlier attempt may have reached it and is not
   * known not sent. No other provider may take it (a second mail); retrying here cannot help. A worker that
   * keeps the provider's settings (MAIL_PROVIDERS_DRAINING) finishes it after `npm run ops -- retry`
   * (docs/providers.md, "Draining a provider").
   */
  ProviderNotConfigured: 'ProviderNotConfigured',
  /** The order does not exist, so there is nothing to send. */
  OrderNotFound: 'OrderNotFound',
  /** The workflow was started with something that is not an order id. */
  InvalidOrderId: 'InvalidOrderId',
  /** Workflow-level: the order's mail row is held by a different workflow id. */
  ClaimHeldElsewhere: 'ClaimHeldElsewhere',
  /** Workflow-level: definitely-not-sent failures went on past the configured number of attempts. */
  MailNotSentGaveUp: 'MailNotSentGaveUp',
  /** Workflow-level: an activity answered what its contract with the workflow rules out (a bug). */
  UnexpectedActivityAnswer: 'UnexpectedActivityAnswer',
  /**
   * The provider's lookup failed (5xx, timeout, a dropped connection): retried by Temporal until the verify
   * activity's deadline, after which the policy decides. Thrown by the verify activity.
   */
  VerificationLookupFailed: 'VerificationLookupFailed',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];
