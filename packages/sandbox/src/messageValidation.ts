// What the sandbox's generic mail API accepts, with the statuses a provider would answer for what it does
// not. The other providers' shapes are read in providers/.

/** A message as the sandbox stores it, whichever provider shape it arrived in. */
export interface ValidMessage {
  orderId: string;
  to: string;
  from: string;
  replyTo: string | null;
  subject: string;
  text: string;
  html: string | null;
  /** The send key the request carried (metadata, user variable, custom argument), which lookups match. */
  sendKey?: string | null;
  /** A Message-Id the request set itself (Mailgun's h:Message-Id), without angle brackets. */
  messageIdHeader?: string | null;
}

export type MessageValidation =
  { ok: true; message: ValidMessage } | { ok: false; status: 400 | 422; error: string };

// Deliberately loose: it exists so a test can store an impossible address, get a 422, fix the address and resend.
const PLAUSIBLE_ADDRESS = /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/;

export function isPlausibleAddress(value: string): boolean {
  return value.length <= 254 && PLAUSIBLE_ADDRESS.test(value);
}

/** metadata.order_id of any JSON body, so even a rejected request can be attributed to its order. */
export function orderIdOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null;
  const metadata = (body as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null) return null;
  const orderId = (metadata as { order_id?: unknown }).order_id;
  return typeof orderId === 'string' && orderId.length > 0 ? orderId : null;
}

export function validateMessage(body: unknown): MessageValidation {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, status: 400, error: 'body must be a JSON object' };
  }
  const fields = body as Record<string, unknown>;
  for (const name of ['from', 'to', 'subject', 'text'] as const) {
    const value = fields[name];
    if (typeof value !== 'string' || value.length === 0) {
      return { ok: false, status: 400, error: `missing field: ${name}` };
    }
  }
  const orderId = orderIdOf(body);
  if (orderId === null) return { ok: false, status: 400, error: 'missing field: metadata.order_id' };
  const replyTo = fields.reply_to ?? null;
  if (replyTo !== null && typeof replyTo !== 'string') {
    return { ok: false, status: 400, error: 'reply_to must be a string or null' };
  }
  const html = fields.html ?? null;
  if (html !== null && typeof html !== 'string') {
    return { ok: false, status: 400, error: 'html must be a string or null' };
  }
  const to = fields.to as string;
  if (!isPlausibleAddress(to)) return { ok: false, status: 422, error: 'invalid recipient' };
  const sendKey = (fields.metadata as { send_key?: unknown }).send_key;
  return {
    ok: true,
    message: {
      orderId,
      to,
      from: fields.from as string,
      replyTo,
      subject: fields.subject as string,
      text: fields.text as string,
      html,
      sendKey: typeof sendKey === 'string' && sendKey.length > 0 ? sendKey : null,
    },
  };
}
