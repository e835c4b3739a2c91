// Mailgun (its api-overview): sends set their own Message-Id from the send key, which the Events API is asked
// for; sources, and the deprecated-API caveat: docs/providers.md, "Where the provider facts come from".
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
  // Free accounts keep 1 day, paid plans up to 30: the shortest is assumed (docs/providers.md, "The send key").
  retentionMs: 1 * DAY_MS,
  retentionSource:
    'Mailgun: 1 day of events on free accounts, up to 30 days on paid plans; the shortest is assumed',
  // The same page: a witness counts only once older than the threshold (the settle delay).
  witnessOrdering: 'trusted-after-settle-delay',
  witnessOrderingSource:
    'documentation.mailgun.com/docs/mailgun/user-manual/events/event-polling: events older than the threshold are trustworthy',
});

/** From Mailgun's quickstart responses; why 404 is not-sent and 5xx unknown: docs/providers.md, "Outcome tables". */
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
      // Mailgun attaches user variables to every event of the message.
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
      // Facts only. Mailgun's rule: follow paging.next until a page comes back empty; a short page is not the last.
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
