// The generic JSON mail API the sandbox speaks, which an in-house gateway can implement; its lookup contract
// and what it promises: docs/providers.md, "The gateway lookup (generic)".
import type {
  LookupAnswer,
  ProviderLookupAdapter,
  VerificationFacts,
} from '../../verification/providerLookup';
import { sendKeyOf } from '../../verification/sendKey';
import { LOOKUP_PROVIDER_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { checkApiKey, lookupEntry, parseJsonObject, safeMessageId } from './adapterSupport';
import type { MailProviderAdapter } from './providerTypes';

const SECOND_MS = 1000;
const DAY_MS = 24 * 60 * 60 * SECOND_MS;

/** The gateway contract's promise: an accepted message is visible to the lookup within this. */
const GENERIC_LOOKUP_VISIBLE_WITHIN_MS = 10 * SECOND_MS;
/** The gateway contract's promise: the lookup remembers a message at least this long. */
const GENERIC_LOOKUP_RETENTION_MS = 7 * DAY_MS;

export const GENERIC_VERIFICATION: VerificationFacts = Object.freeze({
  lookup: true,
  webhook: null,
  // Three times the contract's promise, so a gateway that is a little slower than it says is not misread.
  settleDelayMs: 3 * GENERIC_LOOKUP_VISIBLE_WITHIN_MS,
  documentedSettleDelayMs: GENERIC_LOOKUP_VISIBLE_WITHIN_MS,
  settleDelaySource:
    "this project's own gateway contract (visible within 10 s, src/mail/providers/generic.ts), three times over",
  retentionMs: GENERIC_LOOKUP_RETENTION_MS,
  retentionSource: "this project's own gateway contract (at least 7 days)",
  witnessOrdering: 'watermark',
  witnessOrderingSource:
    "this project's own gateway contract: the answer's watermark is the time up to which its list is complete",
});

export function createGenericAdapter(options: {
  apiKey: string;
  statusTable?: MailProviderAdapter['statusTable'];
}): MailProviderAdapter {
  checkApiKey(options.apiKey);
  const authorization = `Bearer ${options.apiKey}`;
  return {
    name: 'generic',
    statusTable: options.statusTable ?? LOOKUP_PROVIDER_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => ({
      path: '/v1/messages',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        from: mail.from,
        to: mail.to,
        reply_to: mail.replyTo,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        // send_key is what the lookup matches; the same on every attempt of this send.
        metadata: { order_id: mail.orderId, send_key: sendKeyOf(mail) },
      }),
    }),
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.id),
    // Its error bodies are free text ({"error": "…"}): nothing documented to read.
    readProviderError: () => null,
    lookup: genericLookup(authorization),
  };
}

function genericLookup(authorization: string): ProviderLookupAdapter {
  return {
    buildRequest: (query) => ({
      path: `/v1/messages?order_id=${encodeURIComponent(query.orderId)}`,
      headers: { authorization, accept: 'application/json' },
    }),
    readAnswer(status, body): Exclude<LookupAnswer, { kind: 'failed' }> {
      if (status === 401 || status === 403) {
        return {
          kind: 'unanswerable',
          reason: `the gateway refused the lookup (HTTP ${status}): check the key's access`,
        };
      }
      if (status === 404 || status === 405 || status === 501) {
        return {
          kind: 'unanswerable',
          reason: `the gateway has no lookup (HTTP ${status}): it does not implement GET /v1/messages?order_id=`,
        };
      }
      if (status < 200 || status >= 300)
        return { kind: 'unanswerable', reason: `the lookup answered HTTP ${status}` };
      const parsed = parseJsonObject(body);
      const messages = parsed?.messages;
      if (!Array.isArray(messages)) {
        return { kind: 'unanswerable', reason: 'the lookup answer has no "messages" list' };
      }
      // Facts only. The contract has no paging: the list is every message accepted for the order.
      const watermark = parseWatermark(parsed?.watermark);
      return {
        kind: 'entries',
        filteredBy: 'order',
        complete: true,
        ...(watermark === null ? {} : { watermark }),
        entries: (messages as unknown[]).map((entry) => {
          const fields =
            typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
          return lookupEntry({
            sendKey: fields.send_key,
            messageId: fields.id,
            // An older gateway names the order only in the send key; neither makes the entry a stranger.
            orderId: fields.order_id ?? orderIdOfSendKey(fields.send_key),
            acceptedAt: fields.accepted_at,
          });
        }),
      };
    },
  };
}

/** The order id inside one of our send keys (order-confirmation/<deployment>/<order>/<n>), or null. */
function orderIdOfSendKey(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const match = /^order-confirmation\/[^/]+\/([0-9]+)\/[0-9]+$/.exec(value);
  return match === null ? null : match[1]!;
}

/** The answer's watermark, or null when absent or not a time (then the witness keeps the in-order rule). */
function parseWatermark(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const time = new Date(value);
  return Number.isFinite(time.getTime()) ? time : null;
}
