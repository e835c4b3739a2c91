// Mailgun as the sandbox plays it: POST /v3/{domain}/messages, form-encoded, Basic `api:<key>`, 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}; errors are {"message": "…"}.

import { isPlausibleAddress } from '../messageValidation';
import { nonEmptyString, singleHeader, type ProviderEmulation } from './emulation';

const MESSAGES_PATH = /^\/v3\/([^/]+)\/messages$/;
const EVENTS_PATH = /^\/v3\/([^/]+)\/events$/;
const EVENTS_PAGE_PATH = /^\/v3\/([^/]+)\/events\/([A-Za-z0-9_-]+)$/;

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
  // GET /v3/{domain}/events?message-id=…&event=accepted&limit=…: the `accepted` event of each message accepted so
  // far, a page of `limit` (default 300) at a time; paging.next is always there, and a short page is the last.
  // The next page's URL is /v3/{domain}/events/{token}, the token the query and the offset.
  lookup: {
    pages: true,
    servesPath: (pathname) => EVENTS_PATH.test(pathname) || EVENTS_PAGE_PATH.test(pathname),
    search(url, indexed, options) {
      const page = EVENTS_PAGE_PATH.exec(url.pathname);
      const domain = page?.[1] ?? EVENTS_PATH.exec(url.pathname)?.[1] ?? 'sandbox';
      const params = page === null ? url.searchParams : decodePageToken(page[2]!);
      if (params === null) return { matches: 0, answer: failure(400, 'invalid page token') };
      const wanted = params.get('message-id');
      const event = params.get('event');
      const offset = Number(params.get('offset') ?? '0');
      const limit = Math.min(Number(params.get('limit') ?? '300') || 300, options.pageSize ?? 300);
      if (wanted !== null && wanted.startsWith('<') && options.ignoreFilter !== true) {
        // What the maintainers say happens with brackets: the filter matches nothing.
        return { matches: 0, answer: { status: 200, body: { items: [], paging: {} } } };
      }
      const found = [
        ...(event !== null && event !== 'accepted' && options.ignoreFilter !== true
          ? []
          : indexed.filter(
              (message) => options.ignoreFilter === true || wanted === null || message.id === `<${wanted}>`,
            )),
        ...(options.mixIn ?? []),
      ];
      const items = found.slice(offset, offset + limit);
      const next = new URLSearchParams(params);
      next.set('offset', String(offset + items.length));
      return {
        matches: found.length,
        answer: {
          status: 200,
          body: {
            items: items.map((message) => ({
              id: `sbx-accepted-${message.id.replace(/[<>]/g, '')}`,
              event: 'accepted',
              timestamp: Date.parse(message.receivedAt) / 1000,
              message: { headers: { 'message-id': message.id.replace(/^<|>$/g, '') } },
              'user-variables': {
                order_id: message.orderId,
                ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
              },
            })),
            paging: {
              next: `${options.origin}/v3/${domain}/events/${Buffer.from(next.toString()).toString('base64url')}`,
            },
          },
        },
      };
    },
  },
};

function decodePageToken(token: string): URLSearchParams | null {
  try {
    return new URLSearchParams(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}
