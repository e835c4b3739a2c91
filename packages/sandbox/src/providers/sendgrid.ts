// SendGrid v3 Mail Send as the sandbox plays it: POST /v3/mail/send, bearer key, 202 with an empty body and
// the id in X-Message-Id; errors are {"errors":[{"message","field"}]}.

import { isPlausibleAddress } from '../messageValidation';
import { bearerToken, jsonObject, nonEmptyString, type ProviderEmulation } from './emulation';

const errors = (status: number, message: string, field: string | null = null) => ({
  status,
  body: { errors: [{ message, field, help: null }] },
});

export const sendGridEmulation: ProviderEmulation = {
  name: 'sendgrid',
  servesPath: (pathname) => pathname === '/v3/mail/send',
  authenticate(headers, apiKey) {
    const token = bearerToken(headers);
    if (token === apiKey) return null;
    return errors(401, `The provided authorization grant is invalid, expired, or revoked: ${token ?? ''}`);
  },
  parse(raw) {
    const body = jsonObject(raw);
    if (body === null) return { ok: false, orderId: null, answer: errors(400, 'Bad Request') };
    const customArgs = body.custom_args as Record<string, unknown> | undefined;
    const orderId = nonEmptyString(customArgs?.order_id);
    const personalization = (Array.isArray(body.personalizations) ? body.personalizations[0] : null) as {
      to?: Array<{ email?: unknown }>;
    } | null;
    const to = nonEmptyString(personalization?.to?.[0]?.email);
    const from = nonEmptyString((body.from as { email?: unknown } | undefined)?.email);
    const fromName = nonEmptyString((body.from as { name?: unknown } | undefined)?.name);
    const replyTo = nonEmptyString((body.reply_to as { email?: unknown } | undefined)?.email);
    const subject = nonEmptyString(body.subject);
    const content = Array.isArray(body.content)
      ? (body.content as Array<{ type?: unknown; value?: unknown }>)
      : [];
    const text = nonEmptyString(content.find((part) => part.type === 'text/plain')?.value);
    const html = nonEmptyString(content.find((part) => part.type === 'text/html')?.value);
    if (content[0] !== undefined && content[0].type !== 'text/plain') {
      return {
        ok: false,
        orderId,
        answer: errors(400, 'The text/plain content type must be first.', 'content'),
      };
    }
    for (const [field, value] of [
      ['personalizations.0.to', to],
      ['from.email', from],
      ['subject', subject],
      ['content', text ?? html],
      ['custom_args.order_id', orderId],
    ] as const) {
      if (value === null) return { ok: false, orderId, answer: errors(400, `Missing ${field}.`, field) };
    }
    if (!isPlausibleAddress(to!)) {
      return {
        ok: false,
        orderId,
        answer: errors(400, `Does not contain a valid address: ${to!}`, 'personalizations.0.to'),
      };
    }
    return {
      ok: true,
      message: {
        orderId: orderId!,
        to: to!,
        from: fromName === null ? from! : `${fromName} <${from!}>`,
        replyTo,
        subject: subject!,
        text: text ?? '',
        html,
        sendKey: nonEmptyString(customArgs?.send_key),
      },
      idempotencyKey: null,
    };
  },
  messageId: (sequence) => `sbxSendGrid${sequence}`,
  accepted: (id) => ({ status: 202, body: null, headers: { 'x-message-id': id } }),
  error: (status) => errors(status, 'injected fault'),
};
