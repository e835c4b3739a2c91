// Twilio SendGrid, v3 Mail Send: POST https://api.sendgrid.com/v3/mail/send with a bearer key.
// Accepted is 202 with an empty body; the message id comes in the X-Message-Id response header
// (twilio.com/docs/sendgrid/glossary/x-message-id). Error bodies are `{"errors":[{"message","field"}]}`
// of free text with no documented names, so nothing is read from them.
//
// Verification: by signed Event Webhook only (src/webhooks/sendgridWebhook.ts). Its `processed` event carries
// our custom_args, so it names the order and the send. SendGrid's Email Logs API filters by subject and
// recipient but not by custom_args, and our subject is the same for every order, so it has no lookup here.
// A missing event proves nothing (the webhook retries for up to 24 h), so SendGrid can verify "accepted" and
// never "not sent": without an event an unknown outcome is settled by the policy.

import type { VerificationFacts } from '../../verification/providerLookup';
import { sendKeyOf } from '../../verification/sendKey';
import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, headerValue, parseMailbox, safeMessageId, type Mailbox } from './adapterSupport';
import type { MailProviderAdapter } from './providerTypes';

/**
 * SendGrid's documented statuses (twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors
 * and …/responses): 400 bad request, 401 requires authentication, 403 unverified sender or a temporary block
 * after repeated bad requests, 406 missing Accept, 413 payload too large, 451 data residency: rejected (the
 * generic 4xx rule). 429: not sent, retry. 5xx: "the request you made was valid, but an error occurred when
 * SendGrid attempted to process it", so even 503 may follow processing: unknown.
 */
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
