// Postmark single email (send-email-with-api); verified by its Messages API searching Metadata.send_key
// (messages-api, custom-metadata-faq): docs/providers.md, "The send key".
import type {
  AdapterAnswer,
  LookupQuery,
  LookupRequest,
  ProviderLookupAdapter,
  VerificationFacts,
} from '../../verification/providerLookup';
import { sendKeyOf } from '../../verification/sendKey';
import { extendStatusTable, LOOKUP_PROVIDER_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, lookupEntry, parseJsonObject, safeMessageId } from './adapterSupport';
import type { MailProviderAdapter } from './providerTypes';

const DAY_MS = 24 * 60 * 60 * 1000;

export const POSTMARK_VERIFICATION: VerificationFacts = Object.freeze({
  lookup: true,
  webhook: null,
  settleDelayMs: 5 * 60 * 1000,
  documentedSettleDelayMs: null,
  // Postmark documents no figure for how soon an accepted message shows in the Messages API.
  settleDelaySource:
    'not documented by Postmark (postmarkapp.com/developer/api/messages-api gives no indexing delay); 5 min is ' +
    "this project's cautious choice: set MAIL_VERIFY_SETTLE_DELAY_MS from what your account shows",
  // "Messages expire after your retention period, which is 45 days by default (but retention can be customized
  // from 7 to 365 days)": the shortest a server may be set to is what a lookup can count on.
  retentionMs: 7 * DAY_MS,
  retentionSource:
    'postmarkapp.com/developer/api/messages-api: 45 days by default, configurable down to 7; the minimum is assumed',
  // Assumed, not documented: docs/providers.md, "What a witness assumes, per provider".
  witnessOrdering: 'taken-order',
  witnessOrderingSource: 'not documented by Postmark; assumed (docs/providers.md)',
});

/** A page of the search; a larger total is read page by page (postmarkapp.com/developer/api/messages-api). */
const LOOKUP_PAGE_SIZE = 50;
/** The Messages API pages up to offset + count = 10,000; beyond it an answer cannot be complete. */
const POSTMARK_MAX_OFFSET = 10_000;

/** From postmarkapp.com/developer/api/overview; why 500 is unknown: docs/providers.md, "Outcome tables". */
const POSTMARK_STATUS_TABLE = extendStatusTable(
  LOOKUP_PROVIDER_STATUS_TABLE,
  'postmark',
  {},
  { label: 'Postmark', byProviderError: { 'ErrorCode 100': 'not_sent' } },
);

export const DEFAULT_POSTMARK_MESSAGE_STREAM = 'outbound';

export function createPostmarkAdapter(options: {
  apiKey: string;
  messageStream?: string;
}): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const token = options.apiKey;
  const messageStream = options.messageStream ?? DEFAULT_POSTMARK_MESSAGE_STREAM;
  return {
    name: 'postmark',
    statusTable: POSTMARK_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/email',
      headers: {
        'x-postmark-server-token': token,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({
        From: mail.from,
        To: mail.to,
        ...(mail.replyTo === null ? {} : { ReplyTo: mail.replyTo }),
        Subject: mail.subject,
        TextBody: mail.text,
        HtmlBody: mail.html,
        MessageStream: messageStream,
        // send_key is what the Messages API is searched by afterwards; the same on every attempt of this send.
        Metadata: { order_id: mail.orderId, send_key: sendKeyOf(mail) },
      }),
    }),
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.MessageID),
    readProviderError: (_status, body) => {
      const code = parseJsonObject(body)?.ErrorCode;
      // A number is all we take; the Message beside it can quote the recipient.
      return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code < 100_000
        ? `ErrorCode ${code}`
        : null;
    },
    lookup: postmarkLookup(token),
  };
}

/** One status per search, each in turn: left to its default the API might not list a queued message. */
const SEARCHED_STATUSES = ['sent', 'queued'] as const;

function postmarkLookup(token: string): ProviderLookupAdapter {
  const headers = { 'x-postmark-server-token': token, accept: 'application/json' };
  const request = (query: LookupQuery, status: string, offset: number): LookupRequest => {
    const search = new URLSearchParams({
      count: String(LOOKUP_PAGE_SIZE),
      offset: String(offset),
      // The stream the attempt went to, as the fence recorded it: not this worker's setting.
      messagestream: query.destination.scope ?? DEFAULT_POSTMARK_MESSAGE_STREAM,
      status,
      metadata_send_key: query.sendKey,
    });
    return { path: `/messages/outbound?${search.toString()}`, headers };
  };
  return {
    buildRequest: (query) => request(query, SEARCHED_STATUSES[0], 0),
    readAnswer(status, body, query, asked): AdapterAnswer {
      if (status === 401 || status === 403) {
        return {
          kind: 'unanswerable',
          reason: `Postmark refused the Messages API search (HTTP ${status}): the server token needs access to it`,
        };
      }
      const parsed = parseJsonObject(body);
      if (status < 200 || status >= 300) {
        const code = parsed?.ErrorCode;
        const named = typeof code === 'number' && Number.isInteger(code) ? `, ErrorCode ${code}` : '';
        return { kind: 'unanswerable', reason: `Postmark's message search answered HTTP ${status}${named}` };
      }
      const messages = parsed?.Messages;
      if (!Array.isArray(messages)) {
        return { kind: 'unanswerable', reason: 'Postmark\'s message search answer has no "Messages" list' };
      }
      // Facts only: an entry without our metadata is not ours, and src/evidence/evidenceRules.ts says so.
      const entries = (messages as unknown[]).map((entry) => {
        const fields = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
        const metadata =
          typeof fields.Metadata === 'object' && fields.Metadata !== null
            ? (fields.Metadata as Record<string, unknown>)
            : {};
        return lookupEntry({
          sendKey: metadata.send_key,
          orderId: metadata.order_id,
          messageId: fields.MessageID,
          acceptedAt: fields.ReceivedAt,
          scope: fields.MessageStream,
        });
      });
      const total = parsed?.TotalCount;
      if (typeof total !== 'number' || !Number.isInteger(total) || total < 0) {
        return {
          kind: 'entries',
          filteredBy: 'send',
          complete: false,
          incompleteReason: 'the answer has no TotalCount',
          entries,
        };
      }
      const params = new URLSearchParams('path' in asked ? asked.path.split('?')[1] : '');
      const askedStatus = params.get('status') ?? SEARCHED_STATUSES[0];
      const offset = Number(params.get('offset') ?? '0');
      const readSoFar = offset + messages.length;
      if (readSoFar < total) {
        if (messages.length === 0 || readSoFar + LOOKUP_PAGE_SIZE > POSTMARK_MAX_OFFSET) {
          return {
            kind: 'entries',
            filteredBy: 'send',
            complete: false,
            incompleteReason: `TotalCount ${total}, ${readSoFar} readable`,
            entries,
          };
        }
        return { kind: 'page', filteredBy: 'send', entries, next: request(query, askedStatus, readSoFar) };
      }
      const nextStatus = SEARCHED_STATUSES[SEARCHED_STATUSES.indexOf(askedStatus as 'sent') + 1];
      if (nextStatus !== undefined) {
        return { kind: 'page', filteredBy: 'send', entries, next: request(query, nextStatus, 0) };
      }
      return { kind: 'entries', filteredBy: 'send', complete: true, entries };
    },
  };
}
