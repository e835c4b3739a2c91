// The sandbox's provider side: each emulated provider's send endpoint, answered as that provider would, or
// faulted on purpose. One pipeline for all of them: read the body, check the key, read the message, consult
// the idempotency store (Resend), apply a fault, answer in the provider's shape.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Fault, FaultChooser } from './faults';
import { readBody, sendJson } from './httpIo';
import type { IdempotencyStore } from './idempotencyStore';
import type { ValidMessage } from './messageValidation';
import type { ProviderAnswer, ProviderEmulation } from './providers';
import type { RequestRecord, SandboxRecords } from './records';

export interface MailApiContext {
  /** Every key the account holds now: a rotation keeps the old one valid beside the new until it is revoked. */
  apiKeys: readonly string[];
  records: SandboxRecords;
  faults: FaultChooser;
  idempotency: IdempotencyStore;
  /** Keeps `answer` back until `ms` passed (never, if undefined) or the sandbox releases or closes. */
  hold(res: ServerResponse, answer: () => void, ms: number | undefined): void;
  now(): Date;
}

/** Resend's documented bound on a key's length. */
const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

export async function handleMailApiRequest(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  emulation: ProviderEmulation,
  context: MailApiContext,
): Promise<void> {
  // Always read the whole body first: a fault needs the order id, and answering with unread bytes makes RSTs.
  const reading = await readBody(req);
  if (reading.kind === 'client-gone') return;
  let idempotencyKey: string | null = null;
  const record: RecordRequest = (orderId, status, fault, messageId, replayed = false) =>
    context.records.addRequest(
      {
        method: req.method ?? 'UNKNOWN',
        path,
        provider: emulation.name,
        remotePort: req.socket.remotePort ?? null,
        idempotencyKey,
        replayed,
        orderId,
        fault,
        status,
        messageId,
      },
      context.now(),
    );

  if (reading.kind === 'too-large') {
    record(null, 413, null, null);
    return sendJson(res, 413, { error: 'payload too large' });
  }
  const parsed = emulation.parse(reading.text, req.headers, path);
  const orderId = parsed.ok ? parsed.message.orderId : parsed.orderId;
  if (parsed.ok) idempotencyKey = parsed.idempotencyKey;

  const denied = authenticateAnyKey(context.apiKeys, (key) =>
    emulation.authenticate(req.headers, key, {
      method: req.method ?? 'POST',
      url: req.url ?? path,
      body: reading.text,
      now: context.now(),
    }),
  );
  if (denied !== null) {
    record(orderId, denied.status, null, null);
    return sendAnswer(res, denied);
  }
  if (!parsed.ok) {
    record(orderId, parsed.answer.status, null, null);
    return sendAnswer(res, parsed.answer);
  }
  const message = parsed.message;
  const key = idempotencyKey;
  const now = context.now();

  if (key !== null) {
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      const answer = emulation.error(400, 'invalid_idempotency_key');
      record(orderId, answer.status, null, null);
      return sendAnswer(res, answer);
    }
    const found = context.idempotency.lookup(key, reading.text, now.getTime());
    if (found.kind === 'replay') {
      // Faults are not drawn for a replay: the provider answers from its store and sends nothing.
      record(orderId, found.answer.status, null, found.messageId, true);
      return sendAnswer(res, found.answer);
    }
    if (found.kind !== 'new') {
      const answer = emulation.error(
        409,
        found.kind === 'different-body' ? 'invalid_idempotent_request' : 'concurrent_idempotent_requests',
      );
      record(orderId, answer.status, null, null);
      return sendAnswer(res, answer);
    }
  }

  // Faults apply only to requests the provider would otherwise accept, so a queued fault is consumed by the
  // first good request for its order, not by a 401 or a 422.
  const fault = context.faults.next(message.orderId);
  const accept = (finishedAt: number | null = now.getTime()): { id: string; answer: ProviderAnswer } => {
    const { messageIdHeader: _header, sendKey, ...content } = message;
    const { id } = context.records.addMessage(
      { ...content, sendKey: sendKey ?? null, provider: emulation.name, idempotencyKey: key, fault },
      now,
      (sequence) => emulation.messageId(sequence, path, message),
    );
    const answer = emulation.accepted(id, message);
    if (key !== null) {
      context.idempotency.remember(key, reading.text, now.getTime(), { messageId: id, answer, finishedAt });
    }
    return { id, answer };
  };
  const notTaken = (): void => {
    const { messageIdHeader: _header, sendKey, ...content } = message;
    context.records.notTaken(
      { ...content, sendKey: sendKey ?? null, provider: emulation.name, idempotencyKey: key, fault },
      now,
    );
  };

  if (fault === null) {
    const { id, answer } = accept();
    record(message.orderId, answer.status, null, id);
    return sendAnswer(res, answer);
  }
  applyFault(fault, { message, req, res, context, accept, notTaken, record, emulation, key });
}

type RecordRequest = (
  orderId: string | null,
  status: RequestRecord['status'],
  fault: Fault | null,
  messageId: string | null,
  replayed?: boolean,
) => RequestRecord;

interface FaultTarget {
  message: ValidMessage;
  req: IncomingMessage;
  res: ServerResponse;
  context: MailApiContext;
  /** Records the message as accepted (and remembers its idempotency key) and returns its id and answer. */
  accept: (finishedAt?: number | null) => { id: string; answer: ProviderAnswer };
  /** Tells the records' listeners of a send answered without being taken, whose outcome the client cannot know. */
  notTaken: () => void;
  record: RecordRequest;
  emulation: ProviderEmulation;
  key: string | null;
}

function applyFault(fault: Fault, target: FaultTarget): void {
  const { message, req, res, context, accept, notTaken, record, emulation, key } = target;
  switch (fault.kind) {
    case 'accept-then-drop': {
      const { id } = accept();
      record(message.orderId, 'dropped', fault, id);
      // The body was read in full, so this is a clean FIN: the client sees "other side closed".
      req.socket.destroy();
      return;
    }
    case 'drop-without-processing':
      record(message.orderId, 'dropped', fault, null);
      notTaken();
      req.socket.destroy();
      return;
    case 'accept-then-hang': {
      // Processing is over when the answer is due; without `ms`, only when the sandbox releases it.
      const now = context.now().getTime();
      const { id, answer } = accept(fault.ms === undefined ? null : now + fault.ms);
      const entry = record(message.orderId, 'hung', fault, id);
      context.hold(
        res,
        () => {
          if (key !== null) context.idempotency.finish(key, context.now().getTime());
          entry.status = answer.status;
          sendAnswer(res, answer);
        },
        fault.ms,
      );
      return;
    }
    case 'status': {
      const isSuccess = fault.status >= 200 && fault.status < 300;
      const accepted = fault.record === true ? accept() : null;
      record(message.orderId, fault.status, fault, accepted?.id ?? null);
      if (accepted === null && fault.status >= 500) notTaken();
      const answer =
        isSuccess && accepted !== null
          ? { ...accepted.answer, status: fault.status }
          : emulation.error(fault.status, fault.providerError);
      const retryAfter: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
      return sendAnswer(res, { ...answer, headers: { ...answer.headers, ...retryAfter } });
    }
  }
}

function sendAnswer(res: ServerResponse, answer: ProviderAnswer): void {
  if (answer.body === null) {
    res.writeHead(answer.status, { 'content-length': '0', ...answer.headers });
    res.end();
    return;
  }
  sendJson(res, answer.status, answer.body, answer.headers);
}

/** Null when one of the account's keys lets the request in, else the first key's refusal. */
export function authenticateAnyKey<Denial>(
  keys: readonly string[],
  check: (key: string) => Denial | null,
): Denial | null {
  let first: Denial | null = null;
  for (const key of keys) {
    const denied = check(key);
    if (denied === null) return null;
    first ??= denied;
  }
  return first;
}
