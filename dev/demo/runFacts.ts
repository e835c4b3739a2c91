// The facts a run's report is computed from, one record each: a log row, an attempt's audit row, a message the
// sandbox received, a request it answered, and an invariant's result. A leaf: the readers (facts.ts,
// mailTarget.ts) and every section of the report (report.ts and the sections it builds) import these.
import type { LogOutcome, MailOutcome, UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationFact } from './customerOutcomes';

export interface LogRowFact {
  orderId: string;
  state: 'sending' | 'sent' | 'failed';
  /** 'resolved' when an operator settled the row by their word. */
  outcome: LogOutcome | null;
  attempts: number;
  providerMessageId: string | null;
  /** Whether the row's current attempt passed the dispatch fence (absent: not known, taken as no). */
  dispatched?: boolean;
}

export interface AttemptFact {
  orderId: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownOutcomePolicy | null;
  dispatched: boolean;
  /** The provider's message id of an accepted attempt (absent: not known, counted by number instead). */
  providerMessageId?: string | null;
  /** How an unknown outcome was verified with the provider (lookup, webhook, inconclusive), or null. */
  verification: VerificationFact;
  /** When the attempt was settled, ISO 8601 (Postgres's clock, the same machine's as the sandbox's). */
  finishedAt: string;
  /** Operator re-sends before this attempt: which send (idempotency and send key) it was part of. */
  resendCount?: number;
}

export interface MessageFact {
  orderId: string;
  id: string;
  /** When the provider took it, ISO 8601. */
  receivedAt: string;
  /** The send key it carried (HTTP); null where none is known (SMTP). */
  sendKey?: string | null;
  /** Which provider's sandbox received it (--failover); absent with one provider. */
  provider?: string;
}

/** How the sandbox ended one request to its mail API, and the fault it applied (null for none). */
export interface RequestFact {
  orderId: string | null;
  fault: string | null;
}

export interface InvariantResult {
  name: string;
  description: string;
  holds: boolean;
  /** Orders that break it (the first few). */
  violations: string[];
  violationCount: number;
  /**
   * In a run with operators, when it fails: the acts an operator had done on the orders that break it, by act
   * (orders per act), to say what each failure followed.
   */
  actsBehind?: Record<string, number>;
}
