// The sandbox's own generic API: POST /v1/messages, bearer key, 202 {"id"}.

import { orderIdOf, validateMessage } from '../messageValidation';
import { bearerToken, jsonObject, type ProviderEmulation } from './emulation';

export const genericEmulation: ProviderEmulation = {
  name: 'generic',
  servesPath: (pathname) => pathname === '/v1/messages',
  authenticate: (headers, apiKey) =>
    bearerToken(headers) === apiKey ? null : { status: 401, body: { error: 'unauthorized' } },
  parse(text) {
    const body = jsonObject(text);
    if (body === null) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return { ok: false, orderId: null, answer: { status: 400, body: { error: 'malformed JSON' } } };
      }
      return {
        ok: false,
        orderId: orderIdOf(parsed),
        answer: { status: 400, body: { error: 'body must be a JSON object' } },
      };
    }
    const validation = validateMessage(body);
    if (!validation.ok) {
      return {
        ok: false,
        orderId: orderIdOf(body),
        answer: { status: validation.status, body: { error: validation.error } },
      };
    }
    return { ok: true, message: validation.message, idempotencyKey: null };
  },
  messageId: (sequence) => `sbx_${sequence}`,
  accepted: (id) => ({ status: 202, body: { id } }),
  error: (status) => ({ status, body: { error: 'injected fault' } }),
  // The gateway lookup of src/mail/providers/generic.ts: every message accepted for the order, and the
  // watermark up to which that list is complete.
  lookup: {
    servesPath: (pathname) => pathname === '/v1/messages',
    // The contract has no paging: one list per order.
    pages: false,
    search(url, indexed, options) {
      const orderId = url.searchParams.get('order_id');
      if (orderId === null || orderId === '') {
        return { matches: 0, answer: { status: 400, body: { error: 'order_id is required' } } };
      }
      const found = [
        ...indexed.filter((message) => options.ignoreFilter === true || message.orderId === orderId),
        ...(options.mixIn ?? []),
      ];
      return {
        matches: found.length,
        answer: {
          status: 200,
          body: {
            messages: found.map((message) => ({
              id: message.id,
              order_id: message.orderId,
              send_key: message.sendKey,
              accepted_at: message.receivedAt,
            })),
            // Honest unless a reorder plan says otherwise (lookupReorder.ts): every
            // message taken at or before it is in `indexed` (unless forgotten).
            ...(options.watermark === null ? {} : { watermark: options.watermark.toISOString() }),
          },
        },
      };
    },
  },
};
