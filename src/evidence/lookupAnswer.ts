// WHAT A PROVIDER'S LOOKUP SAID, as facts, before anyone decides what they mean. A provider adapter
// (src/mail/providers/*) reads its answer into this shape and decides nothing; whether an entry is ours, whether
// the answer is complete enough for "not found", and when "not found" may count are decided in one place,
// src/evidence/evidenceRules.ts.
import type { SendDestination } from './destination';

/** What we look a send up by; the lookup request is built from the attempt's recorded destination. */
export interface LookupQuery {
  orderId: string;
  /** The send key the attempt's request carried, as the fence recorded it (src/mail/idempotencyKey.ts). */
  sendKey: string;
  /** Where that request went (recorded at the fence); the lookup asks exactly there. */
  destination: SendDestination;
}

/** One message the provider's lookup listed, with whatever it said about it. Absent: not reported. */
export interface LookupEntry {
  /** The send key in the message's metadata (Postmark Metadata, Mailgun user variables, the generic API). */
  sendKey?: string;
  /** The provider's message id (Mailgun: the Message-Id header we set, without angle brackets). */
  messageId?: string;
  /** The order id in the message's metadata. */
  orderId?: string;
  /** When the provider accepted it. */
  acceptedAt?: Date;
  /** The Mailgun domain or Postmark message stream the provider filed it under. */
  scope?: string;
}

export type LookupAnswer =
  | {
      kind: 'entries';
      /**
       * What the request asked the provider to filter by: 'send' (this send's key or message id: Postmark's
       * metadata_send_key, Mailgun's message-id), so every entry should be ours; or 'order' (the generic API's
       * order_id), so every entry should be of this order.
       */
      filteredBy: 'send' | 'order';
      /**
       * Whether these are all the entries the filter matched: the last page read, or the provider's total no
       * larger than what was read. An incomplete list cannot say "not found".
       */
      complete: boolean;
      /** Why the answer is not complete, for the operator (when `complete` is false). */
      incompleteReason?: string;
      /**
       * The time, on the provider's clock, up to which it says its index is complete: every send it took at or
       * before it is listed (the generic gateway's contract). Absent: the provider says nothing of the kind.
       */
      watermark?: Date;
      entries: LookupEntry[];
    }
  /**
   * The provider answered, but not with a list: no access to the lookup, no such domain, no lookup at all.
   * Asking again will not change that.
   */
  | { kind: 'unanswerable'; reason: string }
  /** Nothing decided, worth asking again: a transport error, a timeout, 408, 429, any 5xx. */
  | { kind: 'failed'; reason: string; retryAfterMs: number | null };
