// The sandbox's provider side: `POST /v1/messages`, answered as a provider would, or faulted on purpose.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Fault, FaultChooser } from './faults';
import { parseJson, readBody, sendJson } from './httpIo';
import { orderIdOf, validateMessage, type ValidMessage } from './messageValidation';
import type { RequestRecord, SandboxRecords } from './records';

export interface MailApiContext {
  apiKey: string;
  records: SandboxRecords;
  faults: FaultChooser;
  /** Keeps `answer` back until `ms` passed (never, if undefined) or the sandbox releases or closes. */
  hold(res: ServerResponse, answer: () => void, ms: number | undefined): void;
  now(): Date;
}

export async function handleMailApiRequest(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  context: MailApiContext,
): Promise<void> {
  // Always read the whole body first: a fault needs the order id, and answering with unread bytes makes RSTs.
  const reading = await readBody(req);
  if (reading.kind === 'client-gone') return;
  const base = { method: req.method ?? 'UNKNOWN', path, remotePort: req.socket.remotePort ?? null };
  const record: RecordRequest = (orderId, status, fault, messageId) =>
    context.records.addRequest({ ...base, orderId, fault, status, messageId }, context.now());

  if (reading.kind === 'too-large') {
    record(null, 413, null, null);
    return sendJson(res, 413, { error: 'payload too large' });
  }
  const parsed = parseJson(reading.text);
  const orderId = parsed.ok ? orderIdOf(parsed.value) : null;

  if (req.headers.authorization !== `Bearer ${context.apiKey}`) {
    record(orderId, 401, null, null);
    return sendJson(res, 401, { error: 'unauthorized' });
  }
  if (!parsed.ok) {
    record(orderId, 400, null, null);
    return sendJson(res, 400, { error: 'malformed JSON' });
  }
  const validation = validateMessage(parsed.value);
  if (!validation.ok) {
    record(orderId, validation.status, null, null);
    return sendJson(res, validation.status, { error: validation.error });
  }

  // Faults apply only to requests the provider would otherwise accept, so a queued fault is consumed by the
  // first good request for its order, not by a 401 or a 422.
  const message = validation.message;
  const fault = context.faults.next(message.orderId);
  const accept = (): string => context.records.addMessage({ ...message, fault }, context.now()).id;

  if (fault === null) {
    const id = accept();
    record(message.orderId, 202, null, id);
    return sendJson(res, 202, { id });
  }
  applyFault(fault, { message, req, res, context, accept, record });
}

type RecordRequest = (
  orderId: string | null,
  status: RequestRecord['status'],
  fault: Fault | null,
  messageId: string | null,
) => RequestRecord;

interface FaultTarget {
  message: ValidMessage;
  req: IncomingMessage;
  res: ServerResponse;
  context: MailApiContext;
  /** Records the message as accepted and returns its id. */
  accept: () => string;
  record: RecordRequest;
}

function applyFault(fault: Fault, { message, req, res, context, accept, record }: FaultTarget): void {
  switch (fault.kind) {
    case 'accept-then-drop': {
      const id = accept();
      record(message.orderId, 'dropped', fault, id);
      // The body was read in full, so this is a clean FIN: the client sees "other side closed".
      req.socket.destroy();
      return;
    }
    case 'drop-without-processing':
      record(message.orderId, 'dropped', fault, null);
      req.socket.destroy();
      return;
    case 'accept-then-hang': {
      const id = accept();
      const entry = record(message.orderId, 'hung', fault, id);
      context.hold(
        res,
        () => {
          entry.status = 202;
          sendJson(res, 202, { id });
        },
        fault.ms,
      );
      return;
    }
    case 'status': {
      const id = fault.record === true ? accept() : null;
      record(message.orderId, fault.status, fault, id);
      const headers: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
      const isSuccess = fault.status >= 200 && fault.status < 300;
      return sendJson(
        res,
        fault.status,
        isSuccess && id !== null ? { id } : { error: 'injected fault' },
        headers,
      );
    }
  }
}
