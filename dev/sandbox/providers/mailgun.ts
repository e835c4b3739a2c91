// Mailgun as the sandbox plays it: POST /v3/{domain}/messages, form-encoded, Basic `api:<key>`, 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}; errors are {"message": "…"}.

import { isPlausibleAddress } from '../messageValidation';
import { nonEmptyString, singleHeader, type ProviderEmulation } from './emulation';

const MESSAGES_PATH = /^\/v3\/([^/]+)\/messages$/;

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
      },
      idempotencyKey: null,
    };
  },
  messageId: (sequence, pathname) => `<sbx.${sequence}@${MESSAGES_PATH.exec(pathname)?.[1] ?? 'sandbox'}>`,
  accepted: (id) => ({ status: 200, body: { id, message: 'Queued. Thank you.' } }),
  error: (status) => failure(status, 'injected fault'),
};
