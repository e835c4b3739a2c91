// Resend: POST https://api.resend.com/emails with a bearer key and the claim's Idempotency-Key header
// (src/mail/idempotencyKey.ts; resend.com/docs/dashboard/emails/idempotency-keys). Accepted is 200 {"id": …}; errors carry
// {"statusCode", "name", "message"} with the names listed at resend.com/docs/api-reference/errors.

import { KEY_ALREADY_USED_ERRORS } from '../../shared/unknownOutcome';
import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, documentedName, parseJsonObject, safeMessageId } from './adapterSupport';
import { MAIL_PROVIDER_FACTS } from './mailProvider';
import type { MailProviderAdapter } from './providerTypes';

/** The error names Resend documents; any other `name` is ignored. */
const RESEND_ERROR_NAMES: ReadonlySet<string> = new Set([
  'invalid_idempotency_key',
  'validation_error',
  'missing_api_key',
  'restricted_api_key',
  'invalid_api_key',
  'invalid_from_address',
  'invalid_to_address',
  'not_found',
  'method_not_allowed',
  'invalid_idempotent_request',
  'concurrent_idempotent_requests',
  'invalid_attachment',
  'invalid_scope',
  'invalid_parameter',
  'invalid_region',
  'missing_required_field',
  'daily_quota_exceeded',
  'monthly_quota_exceeded',
  'rate_limit_exceeded',
  'security_error',
  'application_error',
  'internal_server_error',
]);

/**
 * Resend's documented statuses: 400 validation_error / invalid_idempotency_key, 401 missing key, 403 invalid
 * key or unverified domain, 404, 405, 422 missing field and the like: rejected. 429 (rate limit, quotas): not
 * sent. 500 and 503: unknown. 409 has two meanings, told apart by name:
 * - invalid_idempotent_request: "this idempotency key has already been used on a request that had a different
 *   payload. Retrying this request is useless" → unknown: it proves that an earlier request with this key
 *   reached Resend and was processed, so it is evidence of an earlier send, not of "not accepted". The
 *   unknown-outcome decision (src/shared/unknownOutcome.ts, KEY_ALREADY_USED_ERRORS) never retries it under
 *   the same key: the policy settles it.
 * - concurrent_idempotent_requests: "another request with the same idempotency key is currently in progress
 *   … it is safe to retry this request later" → unknown: the first request may still be accepted, and within
 *   the key's window the workflow retries it under the same key.
 */
const RESEND_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'resend',
  // Resend does not say its 503 comes before processing, and one from a load balancer can follow forwarding:
  // unknown, so the workflow retries under the key at Resend. As not_sent it would let failover move the order
  // to a provider the key does not protect.
  { 503: 'unknown' },
  {
    label: 'Resend',
    byProviderError: {
      ...Object.fromEntries([...KEY_ALREADY_USED_ERRORS].map((name) => [name, 'unknown' as const])),
      concurrent_idempotent_requests: 'unknown',
    },
  },
);

const IDEMPOTENCY_HEADER = MAIL_PROVIDER_FACTS.resend.idempotency!.header;

export function createResendAdapter(options: { apiKey: string }): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const authorization = `Bearer ${options.apiKey}`;
  return {
    name: 'resend',
    statusTable: RESEND_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/emails',
      headers: {
        authorization,
        'content-type': 'application/json',
        accept: 'application/json',
        // The same key on every automatic attempt: within 24 h Resend answers a repeat with the first
        // response instead of sending again. A send without one could duplicate, so it is a programming error.
        [IDEMPOTENCY_HEADER]: requiredKey(mail),
      },
      body: JSON.stringify({
        from: mail.from,
        to: [mail.to],
        ...(mail.replyTo === null ? {} : { reply_to: mail.replyTo }),
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        // Tag values allow ASCII letters, digits, '_' and '-': an order id qualifies.
        tags: [{ name: 'order_id', value: mail.orderId }],
      }),
    }),
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.id),
    readProviderError: (_status, body) => documentedName(parseJsonObject(body)?.name, RESEND_ERROR_NAMES),
  };
}

function requiredKey(mail: OutgoingMail): string {
  if (mail.idempotencyKey === undefined || mail.idempotencyKey === '') {
    throw new Error(
      `Resend mail for order ${mail.orderId} has no idempotency key; the send must pass the claim's.`,
    );
  }
  return mail.idempotencyKey;
}
