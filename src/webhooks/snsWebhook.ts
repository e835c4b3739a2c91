// SNS deliveries of SES events (POST /webhooks/ses), verified as SNS documents and with our own limits on top:
// docs/providers.md, "SNS delivery: what the receiver trusts, retries, dead letters".
import { createVerify, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';
import { countSkip, whyNotOurs, type Skipped } from './ourEvent';
import { MalformedWebhookError } from './normalizedEvent';
import { parseSesEvent } from './sesEvent';
import { SnsCertificates, SnsCertificatesBusyError } from './snsCertificates';
import type { AuthenticDelivery } from './signedDelivery';

export { SnsCertificates };

/** SNS_CERT_HOST_PATTERN's default: no narrowing beyond the pinned form (every SNS region). */
export const DEFAULT_SNS_CERT_HOST_PATTERN = '^sns\\.[a-z0-9-]+\\.amazonaws\\.com(\\.cn)?$';
/** SNS_MAX_RETRY_S's default: a custom HTTP/S delivery policy retries for an hour at most. */
export const DEFAULT_SNS_MAX_RETRY_MS = 3_600_000;

/** A region as AWS names them (us-east-1, us-gov-west-1), never S3's `s3-…` names. */
const AWS_REGION = '[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}';
const SNS_HOST = new RegExp(`^sns\\.(${AWS_REGION})\\.amazonaws\\.com(\\.cn)?$`);
const SNS_CERT_PATH = /^\/SimpleNotificationService-[0-9a-f]{1,64}\.pem$/;

export interface SnsSettings {
  topicArns: ReadonlySet<string>;
  /** SNS_CERT_HOST_PATTERN: only narrows AWS's own form. */
  certHostPattern: RegExp;
  requireSignatureVersion2?: boolean;
  maxRetryMs?: number;
  /** Tests only, set in code, never from the environment: a loopback origin also trusted. */
  trustTestCertificateOrigin?: string | null;
}

export type SnsVerdict =
  /** 503: nothing was judged (every certificate fetch was busy); SNS delivers it again. */
  | { ok: false; status: 400 | 401 | 403 | 503; problem: string }
  | { ok: true; kind: 'notification'; delivery: AuthenticDelivery; topicArn: string }
  | { ok: true; kind: 'subscribe'; subscribeUrl: string; topicArn: string }
  | { ok: true; kind: 'unsubscribed'; topicArn: string };

const TYPES = new Set(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation']);
const MESSAGE_ID = /^[A-Za-z0-9-]{1,100}$/;
const TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/;

function refused(status: 400 | 401 | 403 | 503, problem: string): SnsVerdict {
  return { ok: false, status, problem };
}

/** The text SNS signs for this message, or null when a field it needs is missing. */
export function snsStringToSign(message: Record<string, unknown>): string | null {
  const fields =
    message.Type === 'Notification'
      ? [
          'Message',
          'MessageId',
          ...(message.Subject === undefined ? [] : ['Subject']),
          'Timestamp',
          'TopicArn',
          'Type',
        ]
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  let text = '';
  for (const name of fields) {
    const value = message[name];
    if (typeof value !== 'string') return null;
    text += `${name}\n${value}\n`;
  }
  return text;
}

/** Whether `hostname` is an SNS endpoint as AWS names them, in the partition of its region. */
function isSnsHost(hostname: string): boolean {
  const match = SNS_HOST.exec(hostname);
  // China's regions are the only ones under amazonaws.com.cn, and only they are.
  return match !== null && match[1]!.startsWith('cn-') === (match[2] !== undefined);
}

/** Where a signing certificate (or a SubscribeURL) may come from; the reason when it may not. */
export function whyUntrustedSnsUrl(
  value: string,
  settings: Pick<SnsSettings, 'certHostPattern' | 'trustTestCertificateOrigin'>,
  what: 'certificate' | 'subscribe',
): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `the ${what} URL is not a URL`;
  }
  if (url.username !== '' || url.password !== '') return `the ${what} URL carries credentials`;
  const test = settings.trustTestCertificateOrigin ?? null;
  if (test !== null && url.origin === test) {
    return what === 'certificate' && !url.pathname.endsWith('.pem')
      ? 'the certificate URL does not end in .pem'
      : null;
  }
  if (url.protocol !== 'https:') return `the ${what} URL is not https`;
  if (url.port !== '') return `the ${what} URL names a port`;
  if (!isSnsHost(url.hostname) || !settings.certHostPattern.test(url.hostname)) {
    return `the ${what} URL's host is not an SNS host`;
  }
  if (what === 'certificate') {
    // Exactly as AWS writes it: nothing a normalisation could turn into another resource.
    if (url.href !== value || url.search !== '' || url.hash !== '' || !SNS_CERT_PATH.test(url.pathname)) {
      return 'the certificate URL is not /SimpleNotificationService-<hex>.pem on an SNS host';
    }
  }
  return null;
}

/** How long a MessageId is kept against replay: as long as its Timestamp is taken. */
export function snsTokenWindowMs(settings: Pick<SnsSettings, 'maxRetryMs'>, maxAgeMs: number): number {
  return (settings.maxRetryMs ?? DEFAULT_SNS_MAX_RETRY_MS) + maxAgeMs;
}

export async function readSnsDelivery(input: {
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  settings: SnsSettings;
  certificates: SnsCertificates;
  now: Date;
  maxAgeMs: number;
}): Promise<SnsVerdict> {
  let body: unknown;
  try {
    body = JSON.parse(input.rawBody.toString('utf8'));
  } catch {
    return refused(400, 'the body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return refused(400, 'the body is not a JSON object');
  }
  const message = body as Record<string, unknown>;
  const type = message.Type;
  if (typeof type !== 'string' || !TYPES.has(type)) return refused(400, 'not an SNS message type we take');
  const headerType = input.headers['x-amz-sns-message-type'];
  if (headerType !== undefined && headerType !== type) {
    return refused(400, 'the message type header disagrees with the body');
  }
  const { MessageId: messageId, TopicArn: topicArn, Timestamp: timestamp } = message;
  if (typeof messageId !== 'string' || !MESSAGE_ID.test(messageId))
    return refused(400, 'no usable MessageId');
  if (typeof topicArn !== 'string' || !TOPIC_ARN.test(topicArn)) return refused(400, 'no usable TopicArn');
  if (!input.settings.topicArns.has(topicArn)) return refused(403, 'the topic is not on SES_SNS_TOPIC_ARNS');
  const signedAt = typeof timestamp === 'string' ? new Date(timestamp) : new Date(NaN);
  if (!Number.isFinite(signedAt.getTime())) return refused(400, 'no usable Timestamp');

  const version = message.SignatureVersion;
  const algorithm = version === '1' ? 'sha1' : version === '2' ? 'sha256' : null;
  if (algorithm === null) return refused(401, 'an unknown SignatureVersion');
  if (algorithm === 'sha1' && input.settings.requireSignatureVersion2 === true) {
    return refused(401, 'SignatureVersion 1 (SHA1) is refused: SNS_REQUIRE_SIGNATURE_V2 is set');
  }
  const certUrl = message.SigningCertURL ?? message.SigningCertUrl;
  if (typeof certUrl !== 'string') return refused(401, 'no SigningCertURL');
  const untrusted = whyUntrustedSnsUrl(certUrl, input.settings, 'certificate');
  if (untrusted !== null) return refused(401, untrusted);
  const text = snsStringToSign(message);
  const signature = typeof message.Signature === 'string' ? Buffer.from(message.Signature, 'base64') : null;
  if (text === null || signature === null || signature.length === 0) {
    return refused(401, 'missing signature or signed fields');
  }
  let key: KeyObject;
  try {
    key = await input.certificates.publicKey(certUrl, input.now);
  } catch (error) {
    if (error instanceof SnsCertificatesBusyError) {
      return refused(503, 'signing certificate fetches are busy; deliver again later');
    }
    return refused(401, 'the signing certificate could not be fetched or read');
  }
  if (
    !createVerify(algorithm === 'sha1' ? 'RSA-SHA1' : 'RSA-SHA256')
      .update(text, 'utf8')
      .verify(key, signature)
  ) {
    return refused(401, 'the signature does not verify');
  }
  // After the signature, so only SNS's clock is judged; a retry keeps its first Timestamp.
  const age = input.now.getTime() - signedAt.getTime();
  if (age > snsTokenWindowMs(input.settings, input.maxAgeMs) || -age > input.maxAgeMs) {
    return refused(401, 'the signature timestamp is stale');
  }

  if (type === 'SubscriptionConfirmation') {
    const subscribeUrl = message.SubscribeURL as string;
    const why = whyUntrustedSnsUrl(subscribeUrl, input.settings, 'subscribe');
    if (why !== null) return refused(401, why);
    return { ok: true, kind: 'subscribe', subscribeUrl, topicArn };
  }
  if (type === 'UnsubscribeConfirmation') return { ok: true, kind: 'unsubscribed', topicArn };
  try {
    const skipped: Skipped = {};
    const event = parseSesEvent(message.Message as string, messageId);
    const skip =
      typeof event === 'string' ? event : whyNotOurs(event, { signedAt, maxAgeMs: input.maxAgeMs });
    if (skip !== null) countSkip(skipped, skip);
    const events = skip === null && typeof event !== 'string' ? [event] : [];
    return {
      ok: true,
      kind: 'notification',
      topicArn,
      // SNS's MessageId is unique per notification, and a retry of one keeps it: the replay token.
      delivery: { token: messageId, signedAt, events, skipped },
    };
  } catch (error) {
    if (error instanceof MalformedWebhookError) return refused(400, error.message);
    throw error;
  }
}

/** How long the GET that confirms an SNS subscription may take. */
const SUBSCRIBE_TIMEOUT_MS = 10_000;

/** Confirms a subscription by a GET of the URL SNS signed (already checked to be on an SNS host). */
export async function confirmSnsSubscription(
  subscribeUrl: string,
): Promise<'confirmed' | { status: number | null }> {
  try {
    const response = await request(subscribeUrl, {
      method: 'GET',
      headersTimeout: SUBSCRIBE_TIMEOUT_MS,
      bodyTimeout: SUBSCRIBE_TIMEOUT_MS,
    });
    await response.body.dump();
    return response.statusCode >= 200 && response.statusCode < 300
      ? 'confirmed'
      : { status: response.statusCode };
  } catch {
    return { status: null };
  }
}
