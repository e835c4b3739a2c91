// The ApplicationFailure type names activities throw and the workflow branches on (class names do not survive
// serialization). Pure: imported by workflows.

export const FailureType = {
  /** The provider refused this request for good (a 4xx). */
  MailRejected: 'MailRejected',
  /** Definitely not taken: not reached, or refused for now (408, 429, 503). */
  MailNotSent: 'MailNotSent',
  /** May have been accepted (a 5xx, a timeout, a connection lost mid-request). */
  MailOutcomeUnknown: 'MailOutcomeUnknown',
  /** The claim is no longer this attempt's; no request was made. */
  ClaimLost: 'ClaimLost',
  /** The order cannot be mailed as it is (recipient, size); permanent until fixed and reset. */
  MailRefused: 'MailRefused',
  /** The mail is bound to a provider this worker lacks (docs/providers.md, "Draining a provider"). */
  ProviderNotConfigured: 'ProviderNotConfigured',
  OrderNotFound: 'OrderNotFound',
  InvalidOrderId: 'InvalidOrderId',
  /** Workflow-level failures follow; this one: the row is held by another workflow id. */
  ClaimHeldElsewhere: 'ClaimHeldElsewhere',
  MailNotSentGaveUp: 'MailNotSentGaveUp',
  /** An activity answered what its contract rules out (a bug). */
  UnexpectedActivityAnswer: 'UnexpectedActivityAnswer',
  /** The provider's lookup failed; retried until the verify deadline, then the policy decides. */
  VerificationLookupFailed: 'VerificationLookupFailed',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];
