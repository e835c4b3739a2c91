// Mailgun as the sandbox plays it: POST /v3/{domain}/messages, form-encoded, Basic `api:<key>`, 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}; errors are {"message": "…"}.

import { isPlausibleAddress } from '../messageValidation';
import { nonEmptyString, singleHeader, type ProviderEmulation } from './emulation';

const MESSAGES_PATH = /^\/v3\/([^/]+)\/messages$/;
const EVENTS_PATH = /^\/v3\/([^/]+)\/events$/;

const failure = (status: number, message: string) => ({ status, body: { message } });

export const mailgunEmulation: ProviderEmulation = {
  name: 'mailgun',
  servesPath: (pathname) => MESSAGES_PATH.test(pathname),
  authenticate(headers, apiKey) {
    const value = singleHeader(headers, 'authorization');
    const match = value === null ? null : /^Basic (.+)$/.exec(value);
    const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : null;
    if (decoded === `api:${apiKey}`) return null;
    return failure(401, `Invalid private key: ${decoded ?? ''}`);
  },
  parse(raw, headers) {
    const contentType = singleHeader(headers, 'content-type') ?? '';
    if (!contentType.startsWith('application/x-www-form-urlencoded')) {
      return { ok: false, orderId: null, answer: failure(400, 'expected a form-encoded body') };
    }
    const form = new URLSearchParams(raw);
    const orderId = nonEmptyString(form.get('v:order_id'));
    const to = nonEmptyString(form.get('to'));
    const from = nonEmptyString(form.get('from'));
    const subject = nonEmptyString(form.get('subject'));
    const text = nonEmptyString(form.get('text'));
    const html = nonEmptyString(form.get('html'));
    for (const [field, value] of [
      ['from', from],
      ['to', to],
      ['subject', subject],
      ['text', text ?? html],
      ['v:order_id', orderId],
    ] as const) {
      if (value === null)
        return { ok: false, orderId, answer: failure(400, `${field} parameter is missing`) };
    }
    if (!isPlausibleAddress(to!)) {
      return { ok: false, orderId, answer: failure(400, `to parameter is not a valid address: ${to!}`) };
    }
    return {
      ok: true,
      message: {
        orderId: orderId!,
        to: to!,
        from: from!,
        replyTo: nonEmptyString(form.get('h:Reply-To')),
        subject: subject!,
        text: text ?? '',
        html,
        sendKey: nonEmptyString(form.get('v:send_key')),
        messageIdHeader: nonEmptyString(form.get('h:Message-Id'))?.replace(/^<|>$/g, '') ?? null,
      },
      idempotencyKey: null,
    };
  },
  // Mailgun keeps a Message-Id the sender set, and its id is that header in angle brackets.
  messageId: (sequence, pathname, message) =>
    message?.messageIdHeader
      ? `<${message.messageIdHeader}>`
      : `<sbx.${sequence}@${MESSAGES_PATH.exec(pathname)?.[1] ?? 'sandbox'}>`,
  accepted: (id) => ({ status: 200, body: { id, message: 'Queued. Thank you.' } }),
  error: (status) => failure(status, 'injected fault'),
  // GET /v3/{domain}/events?message-id=…&event=accepted: the `accepted` event of each message accepted so far.
  lookup: {
    servesPath: (pathname) => EVENTS_PATH.test(pathname),
    search(url, indexed) {
      const wanted = url.searchParams.get('message-id');
      const event = url.searchParams.get('event');
      if (wanted !== null && wanted.startsWith('<')) {
        // What the maintainers say happens with brackets: the filter matches nothing.
        return { matches: 0, answer: { status: 200, body: { items: [], paging: {} } } };
      }
      const found =
        event !== null && event !== 'accepted'
          ? []
          : indexed.filter((message) => wanted === null || message.id === `<${wanted}>`);
      return {
        matches: found.length,
        answer: {
          status: 200,
          body: {
            items: found.map((message) => ({
              id: `sbx-accepted-${message.id.replace(/[<>]/g, '')}`,
              event: 'accepted',
              timestamp: Date.parse(message.receivedAt) / 1000,
              message: { headers: { 'message-id': message.id.replace(/^<|>$/g, '') } },
              'user-variables': {
                order_id: message.orderId,
                ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
              },
            })),
            paging: {},
          },
        },
      };
    },
  },
};
