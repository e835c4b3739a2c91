// Mailgun: POST {base}/v3/{domain}/messages, form-encoded, HTTP Basic auth `api:<key>`. The base is
// https://api.mailgun.net for US domains and https://api.eu.mailgun.net for EU ones
// (documentation.mailgun.com/docs/mailgun/api-reference/api-overview). Accepted is 200
// {"id": "<…@domain>", "message": "Queued. Thank you."}; error bodies carry a free-text "message" only.
//
// Verification: every send sets its own Message-Id, derived from the send key, so it is the same on every
// attempt of one send and known before the request leaves ("Mailgun will automatically include a unique
// Message-ID or you can set your own", Mailgun FAQ; it must look like id@domain). The Events API is then
// asked for an `accepted` event of that message: GET /v3/{domain}/events?message-id=<id>&event=accepted, the id
// without angle brackets (documentation.mailgun.com …/api-reference/send/mailgun/events; the brackets rule is
// from the mailgun.js maintainers, mailgun/mailgun.js#296). Mailgun marks that API deprecated in favour of its
// Logs API, whose filterable attributes it does not list yet; the Events API is what answers by message id.
// Events also arrive by signed webhook (src/webhooks/mailgunWebhook.ts), carrying the user variables set here.

import type {
  AdapterAnswer,
  ProviderLookupAdapter,
  VerificationFacts,
} from '../../verification/providerLookup';
import { mailgunMessageId } from '../../evidence/messageIdentity';
import type { LookupEntry } from '../../evidence/lookupAnswer';
import { sendKeyOf } from '../../verification/sendKey';
import { extendStatusTable, LOOKUP_PROVIDER_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import {
  checkApiKey,
  lookupEntry,
  MailClientConfigError,
  parseJsonObject,
  safeMessageId,
} from './adapterSupport';
import type { MailProviderAdapter } from './providerTypes';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Events per lookup page; a full page makes the answer incomplete. */
const LOOKUP_PAGE_SIZE = 10;

export { mailgunMessageId };

export const MAILGUN_VERIFICATION: VerificationFacts = Object.freeze({
  lookup: true,
  webhook: 'mailgun',
  // Events may become retrievable out of order; Mailgun's own advice is to trust a page only once its events
  // are older than a threshold, "e.g. half an hour".
  settleDelayMs: 30 * 60 * 1000,
  documentedSettleDelayMs: 30 * 60 * 1000,
  settleDelaySource:
    'documentation.mailgun.com/docs/mailgun/user-manual/events/event-polling: "half an hour"',
  // Retention depends on the plan: 1 day of event logs on free accounts, up to 30 days on paid plans (issue 22;
  // the tracking-messages page's older "at least 2 days" is not what free accounts get). The shortest is
  // assumed; a paid plan sets MAIL_VERIFY_RETENTION_MS to its own (docs/providers.md).
  retentionMs: 1 * DAY_MS,
  retentionSource:
    'Mailgun: 1 day of events on free accounts, up to 30 days on paid plans; the shortest is assumed',
  // The same event-polling page: newer events may still arrive out of order, so a witness counts only once it
  // is older than the threshold (the settle delay, whose default and floor are Mailgun's half hour).
  witnessOrdering: 'trusted-after-settle-delay',
  witnessOrderingSource:
    'documentation.mailgun.com/docs/mailgun/user-manual/events/event-polling: events older than the threshold are trustworthy',
});

/**
 * Mailgun's documented statuses (…/quickstart-guide/responses): 400 bad request, 401 invalid or missing key,
 * 403 access denied, 413: rejected. 429: not sent, retry. 404 "can be temporal as our system is an
 * eventually-consistent system" (a freshly added domain): not sent, so it is retried up to the attempt
 * limit instead of failing at once. 500: Mailgun recommends retrying, but customers report 5xx answers for
 * mail that was still sent (docs/providers.md, "Outcome tables"), so 5xx stays unknown.
 */
const MAILGUN_STATUS_TABLE = extendStatusTable(
  LOOKUP_PROVIDER_STATUS_TABLE,
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
      // Our own Message-Id: the same on every attempt of this send, so the Events API can be asked about it.
      const sendKey = sendKeyOf(mail);
      form.set('h:Message-Id', `<${mailgunMessageId(sendKey, options.domain)}>`);
      // User variables: Mailgun attaches them to every event of the message, so webhooks name the order and
      // the send.
      form.set('v:order_id', mail.orderId);
      form.set('v:send_key', sendKey);
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
    lookup: mailgunLookup(authorization),
  };
}

function mailgunLookup(authorization: string): ProviderLookupAdapter {
  const headers = { authorization, accept: 'application/json' };
  return {
    buildRequest: (query) => {
      // The domain the attempt went to, as the fence recorded it: not this worker's setting.
      const domain = query.destination.scope ?? '';
      const search = new URLSearchParams({
        'message-id': mailgunMessageId(query.sendKey, domain),
        event: 'accepted',
        limit: String(LOOKUP_PAGE_SIZE),
      });
      return {
        path: `/v3/${encodeURIComponent(domain)}/events?${search.toString()}`,
        headers,
      };
    },
    readAnswer(status, body): AdapterAnswer {
      if (status === 401 || status === 403) {
        return {
          kind: 'unanswerable',
          reason: `Mailgun refused the events lookup (HTTP ${status}): the key or the plan lacks access to events`,
        };
      }
      if (status === 404) {
        return {
          kind: 'unanswerable',
          reason: 'Mailgun does not know the sending domain for events (HTTP 404)',
        };
      }
      if (status < 200 || status >= 300)
        return { kind: 'unanswerable', reason: `Mailgun's events answered HTTP ${status}` };
      const items = parseJsonObject(body)?.items;
      if (!Array.isArray(items))
        return { kind: 'unanswerable', reason: 'Mailgun\'s events answer has no "items" list' };
      // Facts only: whether an item is this send (its Message-Id, compared exactly) is decided in
      // src/evidence/evidenceRules.ts. Mailgun's rule for reading events is to follow paging.next until a page
      // comes back empty; a short page is not the last. The lookup client keeps the next URL to the origin
      // we asked.
      const paging = parseJsonObject(body)?.paging;
      const nextUrl =
        typeof paging === 'object' && paging !== null ? (paging as { next?: unknown }).next : undefined;
      const entries = readItems(items as unknown[]);
      if (items.length === 0) return { kind: 'entries', filteredBy: 'send', complete: true, entries };
      if (typeof nextUrl === 'string') {
        return { kind: 'page', filteredBy: 'send', entries, next: { url: nextUrl, headers } };
      }
      return {
        kind: 'entries',
        filteredBy: 'send',
        complete: false,
        incompleteReason: 'a page of events without paging.next, so the end was not seen',
        entries,
      };
    },
  };
}

function readItems(items: unknown[]): LookupEntry[] {
  return items.map((item) => {
    const fields = typeof item === 'object' && item !== null ? (item as Record<string, unknown>) : {};
    const message = fields.message as { headers?: Record<string, unknown> } | undefined;
    const variables =
      typeof fields['user-variables'] === 'object' && fields['user-variables'] !== null
        ? (fields['user-variables'] as Record<string, unknown>)
        : {};
    // Mailgun reports the Message-Id with or without brackets; its send answer's id has them.
    const header = message?.headers?.['message-id'];
    return lookupEntry({
      messageId: typeof header === 'string' && !header.startsWith('<') ? `<${header}>` : header,
      sendKey: variables.send_key,
      orderId: variables.order_id,
      acceptedAt: fields.timestamp,
    });
  });
}
