// Resend as the sandbox plays it: POST /emails, bearer key (missing → 401, wrong → 403), 200 {"id"}; errors
// are {"statusCode", "name", "message"}. The Idempotency-Key store lives in the shared pipeline
// (idempotencyStore.ts), which this emulation opts into by returning the key.

import { isPlausibleAddress } from '../messageValidation';
import {
  bearerToken,
  jsonObject,
  nonEmptyString,
  singleHeader,
  uuidFor,
  type ProviderEmulation,
} from './emulation';

export const resendError = (status: number, name: string, message: string) => ({
  status,
  body: { statusCode: status, name, message },
});

const NAME_FOR_STATUS: Readonly<Record<number, string>> = {
  400: 'validation_error',
  401: 'missing_api_key',
  403: 'invalid_api_key',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'concurrent_idempotent_requests',
  422: 'missing_required_field',
  429: 'rate_limit_exceeded',
  500: 'internal_server_error',
};

// Resend's own wording for the errors the sandbox produces for real (not as injected faults).
const MESSAGE_FOR_NAME: Readonly<Record<string, string>> = {
  invalid_idempotency_key: 'The key must be between 1-256 chars.',
  invalid_idempotent_request: 'Same idempotency key used with a different request payload.',
  concurrent_idempotent_requests: 'Same idempotency key used while original request is still in progress.',
};

export const resendEmulation: ProviderEmulation = {
  name: 'resend',
  servesPath: (pathname) => pathname === '/emails',
  authenticate(headers, apiKey) {
    const token = bearerToken(headers);
    if (token === apiKey) return null;
    if (token === null)
      return resendError(401, 'missing_api_key', 'Missing API key in the authorization header.');
    return resendError(403, 'invalid_api_key', `API key is invalid: ${token}`);
  },
  parse(raw, headers) {
    const body = jsonObject(raw);
    if (body === null) {
      return { ok: false, orderId: null, answer: resendError(400, 'validation_error', 'Invalid JSON.') };
    }
    const tags = Array.isArray(body.tags) ? (body.tags as Array<{ name?: unknown; value?: unknown }>) : [];
    const orderId = nonEmptyString(tags.find((tag) => tag.name === 'order_id')?.value);
    const to = Array.isArray(body.to) ? nonEmptyString(body.to[0]) : nonEmptyString(body.to);
    const from = nonEmptyString(body.from);
    const subject = nonEmptyString(body.subject);
    const text = nonEmptyString(body.text);
    const html = nonEmptyString(body.html);
    for (const [field, value] of [
      ['to', to],
      ['from', from],
      ['subject', subject],
      ['text or html', text ?? html],
      ['tags.order_id', orderId],
    ] as const) {
      if (value === null) {
        return {
          ok: false,
          orderId,
          answer: resendError(422, 'missing_required_field', `Missing \`${field}\` field.`),
        };
      }
    }
    if (!isPlausibleAddress(to!)) {
      return {
        ok: false,
        orderId,
        answer: resendError(422, 'validation_error', `Invalid \`to\` field: ${to!}`),
      };
    }
    const idempotencyKey = singleHeader(headers, 'idempotency-key');
    return {
      ok: true,
      message: {
        orderId: orderId!,
        to: to!,
        from: from!,
        replyTo: nonEmptyString(body.reply_to),
        subject: subject!,
        text: text ?? '',
        html,
      },
      idempotencyKey,
    };
  },
  messageId: (sequence) => uuidFor(sequence),
  accepted: (id) => ({ status: 200, body: { id } }),
  error(status, providerError) {
    const name = providerError ?? NAME_FOR_STATUS[status] ?? 'application_error';
    return resendError(status, name, MESSAGE_FOR_NAME[name] ?? 'injected fault');
  },
};
