// Amazon SNS as the sandbox plays it for SES's event publishing: one topic, a signing certificate made at start
// (testCertificate.ts) and served at GET /sns/SimpleNotificationService-sandbox.pem, a SubscribeURL at GET
// /sns/confirm that counts confirmations, and SES events wrapped into SNS Notifications signed as SNS signs
// them (SignatureVersion 1: RSA-SHA1, 2: RSA-SHA256, over the text of providerFormats.ts's snsStringToSign).
// The receiver trusts this certificate only when a test passes the sandbox's origin as
// trustTestCertificateOrigin; from its environment it never does.
import { createHash, createSign, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SES_TAGS, sesTagValue, snsStringToSign } from './providerFormats';
import { SANDBOX_AWS_ACCOUNT_ID, SANDBOX_SES_CONFIGURATION_SET, SANDBOX_SES_REGION } from './providers/ses';
import type { ReceivedMessage } from './records';
import { makeTestCertificate, type TestCertificate } from './testCertificate';

export const SANDBOX_SNS_TOPIC_ARN = 'arn:aws:sns:us-east-1:000000000000:sandbox-ses-events';
export const SNS_PATH_PREFIX = '/sns/';
const CERT_PATH = '/sns/SimpleNotificationService-sandbox.pem';
const CONFIRM_PATH = '/sns/confirm';

export type SesEventType = 'Send' | 'Delivery' | 'Bounce' | 'Complaint' | 'Reject';

export interface SnsMessageOptions {
  signatureVersion?: '1' | '2';
  /** Another Timestamp than now (a stale message). */
  timestamp?: Date;
  /** Another SigningCertURL (a certificate from a host the receiver must not trust). */
  signingCertUrl?: string;
  topicArn?: string;
  messageId?: string;
}

export class SandboxSns {
  private certificate: TestCertificate | null = null;
  private ownOrigin = 'http://127.0.0.1';
  private confirmations: string[] = [];
  private certificateFetches = 0;
  private signingCertUrl: string | null = null;

  readonly topicArn = SANDBOX_SNS_TOPIC_ARN;

  /**
   * Names its certificate by a URL of AWS's own form, as SNS does, instead of the sandbox's origin: for a
   * receiver that trusts no test origin and fetches through a network of the caller's (the chaos run's
   * forger, snsLies.ts). Returns that URL.
   */
  useAwsCertificateUrl(): string {
    const hex = createHash('sha256').update(this.cert().pem).digest('hex').slice(0, 32);
    this.signingCertUrl = `https://sns.${SANDBOX_SES_REGION}.amazonaws.com/SimpleNotificationService-${hex}.pem`;
    return this.signingCertUrl;
  }

  /** The signing certificate, PEM, as SNS serves it. */
  get certificatePem(): string {
    return this.cert().pem;
  }

  /** Where the sandbox listens: the certificate's and the SubscribeURL's origin. */
  setOrigin(origin: string): void {
    this.ownOrigin = origin;
  }

  get certificateUrl(): string {
    return this.signingCertUrl ?? `${this.ownOrigin}${CERT_PATH}`;
  }

  /** Tokens of the SubscribeURLs fetched so far. */
  confirmed(): string[] {
    return [...this.confirmations];
  }

  /** How often the certificate was fetched (the receiver caches it). */
  get certificateFetchCount(): number {
    return this.certificateFetches;
  }

  handle(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (req.method !== 'GET') return false;
    if (url.pathname === CERT_PATH) {
      this.certificateFetches += 1;
      res.writeHead(200, { 'content-type': 'application/x-x509-ca-cert' }).end(this.cert().pem);
      return true;
    }
    if (url.pathname === CONFIRM_PATH) {
      this.confirmations.push(url.searchParams.get('Token') ?? '');
      res.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse/>');
      return true;
    }
    return false;
  }

  /**
   * The SES event of an accepted message, as event publishing writes it, with the message's tags, the sending
   * account and configuration set (the sandbox's, unless `source` says another: an event from elsewhere).
   */
  sesEvent(
    message: ReceivedMessage,
    eventType: SesEventType,
    at = new Date(),
    source: { account?: string; configurationSet?: string } = {},
  ): Record<string, unknown> {
    const tags: Record<string, string[]> = {
      'ses:configuration-set': [source.configurationSet ?? SANDBOX_SES_CONFIGURATION_SET],
      [SES_TAGS.orderId]: [message.orderId],
      ...(message.sendKey === null ? {} : { [SES_TAGS.sendKey]: [sesTagValue(message.sendKey)] }),
    };
    const timestamp = at.toISOString();
    const detail: Record<string, unknown> =
      eventType === 'Send'
        ? {}
        : eventType === 'Delivery'
          ? { timestamp, recipients: [message.to], smtpResponse: '250 2.0.0 OK' }
          : eventType === 'Bounce'
            ? {
                bounceType: 'Permanent',
                bounceSubType: 'General',
                timestamp,
                bouncedRecipients: [
                  {
                    emailAddress: message.to,
                    diagnosticCode: `smtp; 550 5.1.1 <${message.to}>: user unknown`,
                  },
                ],
              }
            : eventType === 'Complaint'
              ? { timestamp, complainedRecipients: [{ emailAddress: message.to }] }
              : { reason: 'Bad content' };
    return {
      eventType,
      mail: {
        timestamp: message.receivedAt,
        source: message.from,
        sendingAccountId: source.account ?? SANDBOX_AWS_ACCOUNT_ID,
        messageId: message.id,
        destination: [message.to],
        tags,
      },
      [eventType.charAt(0).toLowerCase() + eventType.slice(1)]: detail,
    };
  }

  /** A signed SNS Notification carrying `message` (an SES event) as its Message. */
  notification(event: Record<string, unknown>, options: SnsMessageOptions = {}): Record<string, unknown> {
    return this.signed(
      {
        Type: 'Notification',
        MessageId: options.messageId ?? randomUUID(),
        TopicArn: options.topicArn ?? this.topicArn,
        Message: JSON.stringify(event),
        Timestamp: (options.timestamp ?? new Date()).toISOString(),
      },
      options,
    );
  }

  /** A signed SubscriptionConfirmation whose SubscribeURL is the sandbox's /sns/confirm. */
  subscriptionConfirmation(
    options: SnsMessageOptions & { subscribeUrl?: string } = {},
  ): Record<string, unknown> {
    const token = randomUUID().replace(/-/g, '');
    const topicArn = options.topicArn ?? this.topicArn;
    return this.signed(
      {
        Type: 'SubscriptionConfirmation',
        MessageId: options.messageId ?? randomUUID(),
        Token: token,
        TopicArn: topicArn,
        Message: `You have chosen to subscribe to the topic ${topicArn}.`,
        SubscribeURL:
          options.subscribeUrl ??
          `${this.ownOrigin}${CONFIRM_PATH}?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(topicArn)}&Token=${token}`,
        Timestamp: (options.timestamp ?? new Date()).toISOString(),
      },
      options,
    );
  }

  /** The headers SNS sends with a message. */
  headers(message: Record<string, unknown>): Record<string, string> {
    return {
      'content-type': 'text/plain; charset=UTF-8',
      'x-amz-sns-message-type': String(message.Type),
      'x-amz-sns-message-id': String(message.MessageId),
      'x-amz-sns-topic-arn': String(message.TopicArn),
    };
  }

  private signed(fields: Record<string, unknown>, options: SnsMessageOptions): Record<string, unknown> {
    const version = options.signatureVersion ?? '2';
    const text = snsStringToSign(fields);
    if (text === null) throw new Error('sandbox SNS: a field to sign is missing');
    const signature = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256')
      .update(text, 'utf8')
      .sign(this.cert().privateKey)
      .toString('base64');
    return {
      ...fields,
      SignatureVersion: version,
      Signature: signature,
      SigningCertURL: options.signingCertUrl ?? this.certificateUrl,
      ...(fields.Type === 'Notification'
        ? {
            UnsubscribeURL: `${this.ownOrigin}/sns/unsubscribe?SubscriptionArn=${encodeURIComponent(String(fields.TopicArn))}:sbx`,
          }
        : {}),
    };
  }

  private cert(): TestCertificate {
    // Made when first needed: an RSA key takes a moment, and most sandboxes never play SNS.
    this.certificate ??= makeTestCertificate('sns.sandbox.test');
    return this.certificate;
  }
}
