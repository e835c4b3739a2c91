// The SES event inside an SNS notification: its order, send key, outcome, time, account and configuration set.
import { sendKeyOfSesTag } from '../evidence/messageIdentity';
import { SES_TAGS, sesConfigurationSetProblem } from '../mail/providers/ses';
import {
  MalformedWebhookError,
  optionalMessageId,
  orderIdOrNull,
  scrubbedReason,
  type ProviderEvent,
  type ProviderEventType,
} from './normalizedEvent';

/** The tag SES adds to every event of a send that named a configuration set. */
const SES_CONFIGURATION_SET_TAG = 'ses:configuration-set';
const ACCOUNT_ID = /^[0-9]{12}$/;

const SES_EVENT_TYPES: Readonly<Record<string, ProviderEventType>> = {
  Send: 'accepted',
  Delivery: 'delivered',
  Bounce: 'bounced',
  Complaint: 'complained',
  // SES took the request, then refused to send it (a virus): the mail is dropped.
  Reject: 'dropped',
};

/** The SES event in an SNS Message, or why it is not one we keep (the ourEvent.ts checks come after). */
export function parseSesEvent(text: string, snsMessageId: string): ProviderEvent | 'not-ours' | 'not-kept' {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new MalformedWebhookError('the SNS Message is not an SES event (not JSON)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new MalformedWebhookError('the SNS Message is not an SES event');
  }
  const event = parsed as Record<string, unknown>;
  const mail = (typeof event.mail === 'object' && event.mail !== null ? event.mail : {}) as Record<
    string,
    unknown
  >;
  const tags = (typeof mail.tags === 'object' && mail.tags !== null ? mail.tags : {}) as Record<
    string,
    unknown
  >;
  const tag = (name: string): string | null => {
    const values = tags[name];
    return Array.isArray(values) && values.length === 1 && typeof values[0] === 'string' ? values[0] : null;
  };
  const orderId = orderIdOrNull(tag(SES_TAGS.orderId));
  if (orderId === null) return 'not-ours';
  // Every send of ours names a configuration set, and SES names the account on every event: without both, the
  // event cannot be tied to where an attempt went.
  const account = typeof mail.sendingAccountId === 'string' ? mail.sendingAccountId : '';
  const configurationSet = tag(SES_CONFIGURATION_SET_TAG) ?? '';
  if (!ACCOUNT_ID.test(account) || sesConfigurationSetProblem(configurationSet) !== null) return 'not-ours';
  // Event publishing names it eventType; the older identity notifications notificationType.
  const name = typeof event.eventType === 'string' ? event.eventType : event.notificationType;
  const eventType = typeof name === 'string' ? SES_EVENT_TYPES[name] : undefined;
  if (eventType === undefined) return 'not-kept';
  const detail = (
    typeof event[lowerFirst(name as string)] === 'object' && event[lowerFirst(name as string)] !== null
      ? event[lowerFirst(name as string)]
      : {}
  ) as Record<string, unknown>;
  // A soft bounce is retried by SES; only a permanent one says what became of the mail.
  if (eventType === 'bounced' && detail.bounceType !== 'Permanent') return 'not-kept';
  const sendKeyTag = tag(SES_TAGS.sendKey);
  const occurred =
    typeof detail.timestamp === 'string'
      ? detail.timestamp
      : typeof mail.timestamp === 'string'
        ? mail.timestamp
        : null;
  const occurredAt = occurred === null ? new Date(NaN) : new Date(occurred);
  if (!Number.isFinite(occurredAt.getTime()))
    throw new MalformedWebhookError('an SES event has no usable timestamp');
  return {
    provider: 'ses',
    providerEventId: snsMessageId,
    orderId,
    sendKey: sendKeyTag === null ? null : sendKeyOfSesTag(sendKeyTag),
    providerMessageId: optionalMessageId(mail.messageId),
    eventType,
    occurredAt,
    reason:
      eventType === 'bounced'
        ? scrubbedReason(detail.bounceType, detail.bounceSubType, firstDiagnostic(detail))
        : eventType === 'dropped'
          ? scrubbedReason(detail.reason)
          : null,
    source: { account, configurationSet },
  };
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function firstDiagnostic(bounce: Record<string, unknown>): unknown {
  const recipients = bounce.bouncedRecipients;
  if (!Array.isArray(recipients)) return undefined;
  const first = recipients[0] as { diagnosticCode?: unknown } | undefined;
  return first?.diagnosticCode;
}
