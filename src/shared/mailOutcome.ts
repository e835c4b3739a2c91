// The vocabulary of one send's outcome (docs/design.md §5). Pure: shared by the mail client, the activities,
// the workflow and the tests.

/** What the provider did with one request, as far as we can know. */
export type MailOutcome = 'accepted' | 'rejected' | 'not_sent' | 'unknown';

/**
 * What the log row's outcome may say: a send's outcome; 'resolved' when an operator settled the row; 'legacy'
 * when the old system did, by the case study's own statements (an adopted row, or one its workers settled
 * beside ours: 'sent' means the API accepted it or it timed out, 'failed' a 4xx; docs/adoption.md).
 */
export type LogOutcome = MailOutcome | 'resolved' | 'legacy';

/** What one attempt's audit row says it ended with: a send's outcome, or 'legacy' for the old system's. */
export type AttemptOutcome = MailOutcome | 'legacy';

/** How an unknown outcome is settled. A business setting, configured on the workers, never a literal in code. */
export type UnknownOutcomePolicy = 'assume-sent' | 'assume-failed';

export const UNKNOWN_OUTCOME_POLICIES: readonly UnknownOutcomePolicy[] = ['assume-sent', 'assume-failed'];

/**
 * How an unknown outcome was settled, as the log records it: by the policy, or (with a provider that dedupes
 * by idempotency key, inside its window) by retrying the send under the same key.
 */
export type UnknownSettlement = UnknownOutcomePolicy | 'idempotent-retry';

/** The classified result of one HTTP send. `reason` never carries secrets or personal data. */
export type SendResult =
  | { outcome: 'accepted'; httpStatus: number; providerMessageId: string | null }
  | { outcome: 'rejected'; httpStatus: number | null; errorCode: string | null; reason: string }
  | {
      outcome: 'not_sent';
      httpStatus: number | null;
      errorCode: string | null;
      reason: string;
      /** The provider's Retry-After, in milliseconds, when it gave one. */
      retryAfterMs: number | null;
    }
  | { outcome: 'unknown'; httpStatus: number | null; errorCode: string | null; reason: string };
