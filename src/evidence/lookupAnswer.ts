// A provider's lookup answer as facts; what they mean is decided in src/evidence/evidenceRules.ts.
import type { SendDestination } from './destination';

export interface LookupQuery {
  orderId: string;
  sendKey: string;
  destination: SendDestination;
}

export interface LookupEntry {
  sendKey?: string;
  /** Mailgun: the Message-Id we set, without angle brackets. */
  messageId?: string;
  orderId?: string;
  acceptedAt?: Date;
  scope?: string;
}

export type LookupAnswer =
  | {
      kind: 'entries';
      /** 'send': every entry should be ours; 'order' (the generic API): every entry should be this order's. */
      filteredBy: 'send' | 'order';
      /** All the entries the filter matched were read; an incomplete list cannot say "not found". */
      complete: boolean;
      incompleteReason?: string;
      /** The generic gateway's: up to when, on its clock, its index is complete. */
      watermark?: Date;
      entries: LookupEntry[];
    }
  /** Answered, but not with a list (no access, no such domain): asking again will not change it. */
  | { kind: 'unanswerable'; reason: string }
  /** Nothing decided, worth asking again: a transport error, a timeout, 408, 429, any 5xx. */
  | { kind: 'failed'; reason: string; retryAfterMs: number | null };
