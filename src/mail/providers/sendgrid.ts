// SendGrid v3 Mail Send (glossary x-message-id); error bodies are free text, never read. Verified by signed
// webhook only, no lookup: docs/providers.md, "The send key".
import type { VerificationFacts } from '../../verification/providerLookup';
import { sendKeyOf } from '../../verification/sendKey';
import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, headerValue, parseMailbox, safeMessageId, type Mailbox } from './adapterSupport';
import type { MailProviderAdapter } from './providerTypes';

/** From SendGrid's v3 errors and responses pages; why 503 is unknown: docs/providers.md, "Outcome tables". */
const SENDGRID_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'sendgrid',
  { 503: 'unknown' },
  { label: 'SendGrid' },
);

export const SENDGRID_VERIFICATION: VerificationFacts = Object.freeze({
  lookup: false,
  webhook: 'sendgrid',
  settleDelayMs: 5 * 60 * 1000,
  documentedSettleDelayMs: null,
  // twilio.com/docs/sendgrid/for-developers/tracking-events/twilio-sendgrid-event-webhook-overview promises
  // events "in nearly real time", with no figure.
  settleDelaySource:
    'SendGrid documents its Event Webhook as "nearly real time", with no figure; 5 min is this project\'s choice',
  retentionMs: null,
  retentionSource: 'webhook events are kept in our own table (order_mail_provider_events)',
  // No lookup, so no "not found" and no witness is ever asked for.
  witnessOrdering: 'taken-order',
  witnessOrderingSource: 'no lookup: verified by webhook events only, never by a witness',
});

export function createSendGridAdapter(options: { apiKey: string }): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const authorization = `Bearer ${options.apiKey}`;
  return {
    name: 'sendgrid',
    statusTable: SENDGRID_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/v3/mail/send',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        personalizations: [{ to: [{ email: mail.to }] }],
        from: address(parseMailbox(mail.from)),
        ...(mail.replyTo === null ? {} : { reply_to: address(parseMailbox(mail.replyTo)) }),
        subject: mail.subject,
        // SendGrid requires text/plain before text/html.
        content: [
          { type: 'text/plain', value: mail.text },
          { type: 'text/html', value: mail.html },
        ],
        // Comes back in Event Webhook posts, so an event can be traced to its order and to this send.
        custom_args: { order_id: mail.orderId, send_key: sendKeyOf(mail) },
      }),
    }),
    readMessageId: (headers) => safeMessageId(headerValue(headers, 'x-message-id')),
    readProviderError: () => null,
  };
}

function address(mailbox: Mailbox): { email: string; name?: string } {
  return mailbox.name === null ? { email: mailbox.email } : { email: mailbox.email, name: mailbox.name };
}
