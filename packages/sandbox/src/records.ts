// What the sandbox saw: the messages it accepted (what a customer would receive) and every request that
// reached its mail API. Tests assert on these facts, not on what the client believed.

import type { ProviderName } from './providerFormats';
import type { Fault } from './faults';

/** A message the sandbox accepted. Accepted means "a customer would get this mail", whatever was answered. */
export interface ReceivedMessage {
  /** The id in the provider's own format (X-Message-Id, MessageID, `<…@domain>`, …). */
  id: string;
  /** Which provider's endpoint took it. */
  provider: ProviderName;
  orderId: string;
  to: string;
  from: string;
  replyTo: string | null;
  subject: string;
  text: string;
  html: string | null;
  /** The Idempotency-Key it came with (Resend), or null. */
  idempotencyKey: string | null;
  /** The send key it carried (metadata, user variable, custom argument), which lookups match; or null. */
  sendKey: string | null;
  /** ISO 8601, so the record reads the same through the control API. */
  receivedAt: string;
  /** The fault applied to the request that carried it, if any. */
  fault: Fault | null;
}

/** How the sandbox ended a request: a status it answered, a socket it dropped, or an answer it still holds back. */
export type RequestEnding = number | 'dropped' | 'hung';

export interface RequestRecord {
  /** 1, 2, 3… in arrival order (after the body was read). */
  sequence: number;
  receivedAt: string;
  method: string;
  path: string;
  /** The provider whose endpoint the path is, or null for an unknown path. */
  provider: ProviderName | null;
  /** The Idempotency-Key header of a Resend request, or null. */
  idempotencyKey: string | null;
  /** The answer was replayed from the idempotency store: no new message. */
  replayed: boolean;
  /** metadata.order_id when the body was JSON and had one. */
  orderId: string | null;
  fault: Fault | null;
  status: RequestEnding;
  /** Set when the message was recorded as accepted. */
  messageId: string | null;
  /** Tells keep-alive reuse from fresh connections. */
  remotePort: number | null;
}

export type NewMessage = Omit<ReceivedMessage, 'id' | 'receivedAt'>;

export class SandboxRecords {
  private messageList: ReceivedMessage[] = [];
  private readonly acceptedListeners: ((message: ReceivedMessage) => void)[] = [];
  private readonly notTakenListeners: ((message: ReceivedMessage) => void)[] = [];
  private notTakenNumber = 0;
  private requestList: RequestRecord[] = [];
  // Never reset: a provider does not hand out a message id twice, and neither does the sandbox.
  private lastMessageNumber = 0;

  /** Stores a message under the id `formatId` makes of its number (1, 2, … over the sandbox's life). */
  addMessage(message: NewMessage, now: Date, formatId: (sequence: number) => string): ReceivedMessage {
    this.lastMessageNumber += 1;
    const stored = { id: formatId(this.lastMessageNumber), receivedAt: now.toISOString(), ...message };
    this.messageList.push(stored);
    for (const listener of this.acceptedListeners) listener({ ...stored });
    return stored;
  }

  /** Called with every message from now on, at the moment it counts as accepted (before any answer). */
  onAccepted(listener: (message: ReceivedMessage) => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * A message the provider answered without taking (a 5xx, a connection dropped before processing): a send
   * whose outcome the client cannot know, and that no genuine event will ever confirm. Not stored.
   */
  notTaken(message: NewMessage, now: Date): void {
    this.notTakenNumber += 1;
    const record = { id: `never-taken-${this.notTakenNumber}`, receivedAt: now.toISOString(), ...message };
    for (const listener of this.notTakenListeners) listener({ ...record });
  }

  onNotTaken(listener: (message: ReceivedMessage) => void): void {
    this.notTakenListeners.push(listener);
  }

  addRequest(request: Omit<RequestRecord, 'sequence' | 'receivedAt'>, now: Date): RequestRecord {
    const stored = { sequence: this.requestList.length + 1, receivedAt: now.toISOString(), ...request };
    this.requestList.push(stored);
    return stored;
  }

  /** Copies, so a caller cannot rewrite what the sandbox saw. */
  messages(orderId?: string): ReceivedMessage[] {
    const selected =
      orderId === undefined ? this.messageList : this.messageList.filter((m) => m.orderId === orderId);
    return selected.map((message) => ({ ...message }));
  }

  requests(): RequestRecord[] {
    return this.requestList.map((request) => ({ ...request }));
  }

  reset(): void {
    this.messageList = [];
    this.requestList = [];
  }
}
