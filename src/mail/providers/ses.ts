// Amazon SES v2 SendEmail, signed with SigV4; only the error's name is read, never its message. No key and
// no lookup: an unknown outcome waits for a Send event (docs/providers.md, Amazon SES).
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { sesTagValue } from '../../evidence/messageIdentity';
import type { VerificationFacts } from '../../verification/providerLookup';
import { sendKeyOf } from '../../verification/sendKey';
import { extendStatusTable, GENERIC_STATUS_TABLE } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import {
  headerValue,
  MailClientConfigError,
  parseJsonObject,
  parseMailbox,
  safeMessageId,
} from './adapterSupport';
import type { AwsCredentialProvider } from './awsCredentials';
import type { MailProviderAdapter, ProviderRequest, ResponseHeaders } from './providerTypes';

export const SES_SEND_PATH = '/v2/email/outbound-emails';
/** The name SES v2 requests are signed for (its endpoint is email.{region}, its signing name "ses"). */
export const SES_SIGNING_SERVICE = 'ses';

export const SES_TAGS = { orderId: 'order_id', sendKey: 'send_key' } as const;

const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-[0-9]$/;
// SES: a configuration set name is 1-64 letters, digits, '_' and '-'.
const CONFIGURATION_SET = /^[A-Za-z0-9_-]{1,64}$/;

export function sesEndpoint(region: string): string {
  return `https://email.${region}.amazonaws.com`;
}

export function sesRegionProblem(region: string): string | null {
  return AWS_REGION.test(region) ? null : `an AWS region such as eu-west-1 (got ${JSON.stringify(region)})`;
}

export function sesConfigurationSetProblem(name: string): string | null {
  return CONFIGURATION_SET.test(name)
    ? null
    : '1 to 64 letters, digits, "_" or "-" (the name of an SES configuration set)';
}

export const SES_VERIFICATION: VerificationFacts = Object.freeze({
  lookup: false,
  webhook: 'ses',
  // SES documents no figure: 5 min is our choice, as with SendGrid (docs/providers.md, Amazon SES).
  settleDelayMs: 5 * 60 * 1000,
  documentedSettleDelayMs: null,
  settleDelaySource:
    "SES documents no delay between a send and its Send event; 5 min is this project's choice: set " +
    'MAIL_VERIFY_SETTLE_DELAY_MS from what your account shows',
  retentionMs: null,
  retentionSource: 'SNS-delivered events are kept in our own table (order_mail_provider_events)',
  // No lookup, so no "not found" and no witness is ever asked for.
  witnessOrdering: 'taken-order',
  witnessOrderingSource: 'no lookup: verified by webhook events only, never by a witness',
});

/** SES v2's documented SendEmail errors, by the short name we keep (a trailing "Exception" dropped). */
const DOCUMENTED_ERRORS = new Set([
  'AccountSuspended',
  'BadRequest',
  'LimitExceeded',
  'MailFromDomainNotVerified',
  'MessageRejected',
  'NotFound',
  'SendingPaused',
  'TooManyRequests',
  // AWS's common errors, any service: signing, credentials, throttling.
  'Throttling',
  'ExpiredToken',
  'InvalidSignature',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'UnrecognizedClient',
  'AccessDenied',
  'InvalidClientTokenId',
  'RequestExpired',
  'RequestTimeTooSkewed',
]);

/** A signature refused for its time alone; AWS says so only in the message: docs/providers.md, Amazon SES. */
export const SES_SIGNATURE_TIME_ERROR = 'SignatureExpired';
const SIGNATURE_TIME_MESSAGE = /^Signature (expired|not yet current)\b/;

/** From the SES v2 SendEmail errors and AWS's common errors; each row's why: docs/providers.md, Amazon SES. */
const SES_STATUS_TABLE = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'ses',
  { 429: 'not_sent', 501: 'unknown', 503: 'unknown' },
  {
    label: 'Amazon SES',
    byProviderError: {
      TooManyRequests: 'not_sent',
      Throttling: 'not_sent',
      ExpiredToken: 'not_sent',
      RequestExpired: 'not_sent',
      RequestTimeTooSkewed: 'not_sent',
      [SES_SIGNATURE_TIME_ERROR]: 'not_sent',
    },
  },
);

export interface SesAdapterOptions {
  region: string;
  configurationSet: string;
  credentials: AwsCredentialProvider;
  now?: () => Date;
}

export function createSesAdapter(options: SesAdapterOptions): MailProviderAdapter {
  const regionProblem = sesRegionProblem(options.region);
  if (regionProblem !== null) throw new MailClientConfigError(`The SES region must be ${regionProblem}.`);
  const setProblem = sesConfigurationSetProblem(options.configurationSet);
  if (setProblem !== null) {
    throw new MailClientConfigError(`The SES configuration set name must be ${setProblem}.`);
  }
  const signer = new SignatureV4({
    service: SES_SIGNING_SERVICE,
    region: options.region,
    credentials: options.credentials,
    sha256: Sha256,
    // The path is sent as it is; SES's own SDK does not double-encode it either.
    uriEscapePath: true,
    applyChecksum: true,
  });
  const now = options.now ?? (() => new Date());
  return {
    name: 'ses',
    statusTable: SES_STATUS_TABLE,
    buildRequest: (mail: OutgoingMail) => {
      const sendKey = sendKeyOf(mail);
      return {
        path: SES_SEND_PATH,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          FromEmailAddress: sesAddress(mail.from),
          Destination: { ToAddresses: [mail.to] },
          ...(mail.replyTo === null ? {} : { ReplyToAddresses: [sesAddress(mail.replyTo)] }),
          Content: {
            Simple: {
              Subject: { Data: mail.subject, Charset: 'UTF-8' },
              Body: {
                Text: { Data: mail.text, Charset: 'UTF-8' },
                Html: { Data: mail.html, Charset: 'UTF-8' },
              },
            },
          },
          // The set publishes the events; the tags come back on every one of them (src/webhooks/snsWebhook.ts).
          ConfigurationSetName: options.configurationSet,
          EmailTags: [
            { Name: SES_TAGS.orderId, Value: mail.orderId },
            { Name: SES_TAGS.sendKey, Value: sesTagValue(sendKey) },
          ],
        }),
      };
    },
    // Signed last, just before the request leaves: credentials are fetched (and refreshed) here.
    authorize: async (request: ProviderRequest, target) => {
      const url = new URL(target.origin);
      const signed = await signer.sign(
        {
          method: 'POST',
          protocol: url.protocol,
          hostname: url.hostname,
          ...(url.port === '' ? {} : { port: Number(url.port) }),
          path: target.path,
          query: {},
          headers: { ...request.headers, host: url.host },
          body: request.body,
        },
        { signingDate: now() },
      );
      return { ...request, headers: signed.headers };
    },
    readMessageId: (_headers, body) => safeMessageId(parseJsonObject(body)?.MessageId),
    readProviderError: (_status, body, headers) => sesErrorName(headers ?? {}, body),
  };
}

/** The documented error name of an SES answer, from its x-amzn-ErrorType header or its body; else null. */
function sesErrorName(headers: ResponseHeaders, body: string | null): string | null {
  const parsed = parseJsonObject(body);
  const candidates = [
    headerValue(headers, 'x-amzn-errortype'),
    parsed?.__type,
    parsed?.code,
    parsed?.Code,
    (parsed?.Error as { Code?: unknown } | undefined)?.Code,
  ];
  for (const candidate of candidates) {
    if (typeof candidate !== 'string') continue;
    // "MessageRejected:http://internal.amazon.com/…", "com.amazonaws.sesv2#MessageRejected".
    const bare = candidate
      .split(':')[0]!
      .split('#')
      .pop()!
      .replace(/Exception$/, '');
    if (!DOCUMENTED_ERRORS.has(bare)) continue;
    if ((bare === 'SignatureDoesNotMatch' || bare === 'InvalidSignature') && signatureTimeRefused(parsed)) {
      return SES_SIGNATURE_TIME_ERROR;
    }
    return bare;
  }
  return null;
}

/** Whether the answer's message says the signature was refused for its time; the message is not kept. */
function signatureTimeRefused(parsed: Record<string, unknown> | null): boolean {
  const error = parsed?.Error as { Message?: unknown } | undefined;
  return [parsed?.message, parsed?.Message, error?.Message].some(
    (message) => typeof message === 'string' && SIGNATURE_TIME_MESSAGE.test(message),
  );
}

/** SES refuses raw non-ASCII in FromEmailAddress: a display name goes as an RFC 2047 encoded word. */
function sesAddress(value: string): string {
  const mailbox = parseMailbox(value);
  if (mailbox.name === null) return mailbox.email;

  const name = /^[\x20-\x7e]*$/.test(mailbox.name)
    ? `"${mailbox.name.replace(/["\\]/g, '\\$&')}"`
    : `=?UTF-8?B?${Buffer.from(mailbox.name, 'utf8').toString('base64')}?=`;
  return `${name} <${mailbox.email}>`;
}
