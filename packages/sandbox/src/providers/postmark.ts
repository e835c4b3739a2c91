// Postmark as the sandbox plays it: POST /email with X-Postmark-Server-Token, 200 {"To","SubmittedAt",
// "MessageID","ErrorCode":0,"Message":"OK"}; errors are {"ErrorCode": n, "Message": "…"}.

import { isPlausibleAddress } from '../messageValidation';
import { jsonObject, nonEmptyString, singleHeader, uuidFor, type ProviderEmulation } from './emulation';

const failure = (status: number, errorCode: number, message: string) => ({
  status,
  body: { ErrorCode: errorCode, Message: message },
});

export const postmarkEmulation: ProviderEmulation = {
  name: 'postmark',
  servesPath: (pathname) => pathname === '/email',
  authenticate(headers, apiKey) {
    const token = singleHeader(headers, 'x-postmark-server-token');
    if (token === apiKey) return null;
    return failure(401, 10, `Request does not contain a valid Server token: '${token ?? ''}'.`);
  },
  parse(raw) {
    const body = jsonObject(raw);
    if (body === null) return { ok: false, orderId: null, answer: failure(422, 402, 'Invalid JSON') };
    const metadata = body.Metadata as Record<string, unknown> | undefined;
    const orderId = nonEmptyString(metadata?.order_id);
    const to = nonEmptyString(body.To);
    const from = nonEmptyString(body.From);
    const subject = nonEmptyString(body.Subject);
    const text = nonEmptyString(body.TextBody);
    const html = nonEmptyString(body.HtmlBody);
    for (const [field, value] of [
      ['To', to],
      ['From', from],
      ['Subject', subject],
      ['TextBody or HtmlBody', text ?? html],
      ['Metadata.order_id', orderId],
    ] as const) {
      if (value === null) {
        return { ok: false, orderId, answer: failure(422, 300, `Invalid email request: missing ${field}.`) };
      }
    }
    if (!isPlausibleAddress(to!)) {
      return { ok: false, orderId, answer: failure(422, 300, `Invalid 'To' address: '${to!}'.`) };
    }
    return {
      ok: true,
      message: {
        orderId: orderId!,
        to: to!,
        from: from!,
        replyTo: nonEmptyString(body.ReplyTo),
        subject: subject!,
        text: text ?? '',
        html,
        sendKey: nonEmptyString(metadata?.send_key),
      },
      idempotencyKey: null,
    };
  },
  messageId: (sequence) => uuidFor(sequence),
  accepted: (id, message) => ({
    status: 200,
    body: {
      To: message.to,
      SubmittedAt: new Date().toISOString(),
      MessageID: id,
      ErrorCode: 0,
      Message: 'OK',
    },
  }),
  // GET /messages/outbound: count and offset are required, one metadata_<key> filter at a time.
  lookup: {
    servesPath: (pathname) => pathname === '/messages/outbound',
    pages: true,
    search(url, indexed, options) {
      const count = Number(url.searchParams.get('count'));
      const offset = Number(url.searchParams.get('offset'));
      if (!Number.isInteger(count) || count < 1 || count > 500 || !Number.isInteger(offset) || offset < 0) {
        return { matches: 0, answer: failure(422, 300, "Invalid 'count' or 'offset'.") };
      }
      const metadataFilters = [...url.searchParams.keys()].filter((name) => name.startsWith('metadata_'));
      if (metadataFilters.length > 1) {
        return {
          matches: 0,
          answer: failure(422, 300, 'Only one metadata field may be searched at a time.'),
        };
      }
      const stream = url.searchParams.get('messagestream');
      // The sandbox sends every message at once: none is ever still queued.
      const status = url.searchParams.get('status');
      const found = indexed.filter((message) => {
        if (options.ignoreFilter === true) return true;
        if (status === 'queued') return false;
        if (metadataFilters[0] === 'metadata_send_key') {
          return message.sendKey === url.searchParams.get('metadata_send_key');
        }
        if (metadataFilters[0] === 'metadata_order_id') {
          return message.orderId === url.searchParams.get('metadata_order_id');
        }
        // Any other metadata field: none of our messages has it.
        return metadataFilters.length === 0 && (stream === null || stream === 'outbound');
      });
      found.push(...(options.mixIn ?? []));
      const page = found.slice(offset, offset + Math.min(count, options.pageSize ?? count));
      return {
        matches: found.length,
        answer: {
          status: 200,
          body: {
            TotalCount: found.length,
            Messages: page.map((message) => ({
              MessageID: message.id,
              MessageStream: stream ?? 'outbound',
              Recipients: [message.to],
              ReceivedAt: message.receivedAt,
              Status: 'Sent',
              Metadata: {
                order_id: message.orderId,
                ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
              },
            })),
          },
        },
      };
    },
  },
  error(status, providerError) {
    const code =
      providerError !== undefined && /^[0-9]+$/.test(providerError)
        ? Number(providerError)
        : defaultCode(status);
    return failure(status, code, 'injected fault');
  },
};

function defaultCode(status: number): number {
  if (status === 401) return 10;
  if (status === 422) return 300;
  if (status === 429) return 429;
  return 0;
}
