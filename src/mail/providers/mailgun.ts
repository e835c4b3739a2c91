// Mailgun: POST {base}/v3/{domain}/messages, form-encoded, HTTP Basic auth `api:<key>`. The base is
// https://api.mailgun.net for US domains and https://api.eu.mailgun.net for EU ones
// (documentation.mailgun.com/docs/mailgun/api-reference/api-overview). Accepted is 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}; error bodies carry a free-text "message" only.

import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, MailClientConfigError, parseJsonObject, safeMessageId } from './adapterSupport';
import type { MailProviderAdapter } from './mailProvider';

/**
 * Mailgun's documented statuses (…/quickstart-guide/responses): 400 bad request, 401 invalid or missing key,
 * 403 access denied, 413: rejected. 429: not sent, retry. 404 "can be temporal as our system is an
 * eventually-consistent system" (a freshly added domain): not sent, so it is retried up to the attempt
 * limit instead of failing at once. 500: Mailgun recommends retrying, but customers report 5xx answers for
 * mail that was still sent (research note §7), so 5xx stays unknown.
 */
export const MAILGUN_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'mailgun',
  { 404: 'not_sent' },
  { label: 'Mailgun' },
);

// A domain name, so the path cannot be bent by a stray '/' or '..'.
const DOMAIN =
  /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

export function createMailgunAdapter(options: { apiKey: string; domain: string }): MailProviderAdapter {
  checkApiKey(options.apiKey);
  if (!DOMAIN.test(options.domain)) {
    throw new MailClientConfigError(
      'The Mailgun sending domain must be a domain name such as mg.example.com.',
    );
  }
  const authorization = `Basic ${Buffer.from(`api:${options.apiKey}`).toString('base64')}`;
  const path = `/v3/${options.domain}/messages`;
  return {
    name: 'mailgun',
    statusTable: MAILGUN_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => {
      const form = new URLSearchParams();
      form.set('from', mail.from);
      form.set('to', mail.to);
      form.set('subject', mail.subject);
      form.set('text', mail.text);
      form.set('html', mail.html);
      if (mail.replyTo !== null) form.set('h:Reply-To', mail.replyTo);
      // A user variable: Mailgun attaches it to every event of the message, so webhooks name the order.
      form.set('v:order_id', mail.orderId);
      return {
        path,
        headers: {
          authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
      };
    },
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.id),
    readProviderError: () => null,
  };
}
