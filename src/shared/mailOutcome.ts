// The vocabulary of one send's outcome (docs/design.md §5). Pure.

export type MailOutcome = 'accepted' | 'rejected' | 'not_sent' | 'unknown';

/** 'resolved': an operator settled it; 'legacy': the old system did (docs/adoption.md). */
export type LogOutcome = MailOutcome | 'resolved' | 'legacy';

export type AttemptOutcome = MailOutcome | 'legacy';

/** A business setting on the workers, never a literal in code. */
export type UnknownOutcomePolicy = 'assume-sent' | 'assume-failed';

export const UNKNOWN_OUTCOME_POLICIES: readonly UnknownOutcomePolicy[] = ['assume-sent', 'assume-failed'];

export type UnknownSettlement = UnknownOutcomePolicy | 'idempotent-retry';

/** `reason` never carries secrets or personal data. */
export type SendResult =
  | { outcome: 'accepted'; httpStatus: number; providerMessageId: string | null }
  | { outcome: 'rejected'; httpStatus: number | null; errorCode: string | null; reason: string }
  | {
      outcome: 'not_sent';
      httpStatus: number | null;
      errorCode: string | null;
      reason: string;
      retryAfterMs: number | null;
    }
  | { outcome: 'unknown'; httpStatus: number | null; errorCode: string | null; reason: string };
