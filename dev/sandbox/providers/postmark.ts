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
