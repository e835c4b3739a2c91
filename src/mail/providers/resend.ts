// Resend, with the claim's Idempotency-Key (resend.com/docs/dashboard/emails/idempotency-keys; error names:
// resend.com/docs/api-reference/errors).
import { KEY_ALREADY_USED_ERRORS } from '../../shared/unknownOutcome';
import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, documentedName, parseJsonObject, safeMessageId } from './adapterSupport';
import { MAIL_PROVIDER_FACTS } from './mailProvider';
import type { MailProviderAdapter } from './providerTypes';

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

/** Resend's documented statuses; its two 409s: docs/providers.md, "What the log records". */
const RESEND_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'resend',
  // Unknown, so it is retried under the key at Resend: docs/providers.md, "Outcome tables".
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
        // Within 24 h Resend answers a repeat with the first response; without a key it could duplicate.
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
  if (mail.sendKey === undefined || mail.sendKey === '') {
    throw new Error(
      `Resend mail for order ${mail.orderId} has no idempotency key; the send must pass the claim's.`,
    );
  }
  return mail.sendKey;
}
