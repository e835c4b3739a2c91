// The sandbox's lies about SES over SNS, for the chaos profile (`--lying-provider --provider ses`): SNS
// notifications carrying an SES `Send` event (the one that marks a send accepted) for a message SES did not
// take, or did. Each kind has the one answer a correct receiver gives:
//   forged-host       signed by a forger, SigningCertURL on a host that is not SNS's: S3's names for a bucket
//                     called "sns" (sns.s3…, sns.s3-<region>…, sns.s3-accelerate…), a longer host, a port,
//                     http, a user in the URL                                               → 401
//   forged-path       signed by a forger, SigningCertURL on SNS's host but not AWS's path form (a query, a
//                     second slash, a dot segment)                                           → 401
//   forged-signature  the genuine certificate URL, signed with the forger's key              → 401
//   stale-timestamp   genuinely signed, Timestamp older than SNS retries (SNS_MAX_RETRY_S + the clock window) → 401
//   other-account     genuinely signed (anyone the topic lets publish), from another AWS account → 2xx, kept
//                     as from elsewhere: it settles no attempt
//   other-configuration-set  the same from another configuration set                        → 2xx, kept, settles nothing
// The forger serves its own certificate at every URL its messages name: the chaos run's receiver fetches
// certificates through forgerNetwork(), which answers the genuine SNS certificate for its one URL and the
// forger's for any other. So a URL the pinned check lets through is the forger's, the worst case.
import { randomUUID } from 'node:crypto';
import { SANDBOX_SES_REGION } from './providers/ses';
import type { ReceivedMessage } from './records';
import type { SandboxSns } from './sns';
import { SandboxSns as Sns } from './sns';

export const SES_LIE_KINDS = [
  'forged-host',
  'forged-path',
  'forged-signature',
  'stale-timestamp',
  'other-account',
  'other-configuration-set',
] as const;
export type SesLieKind = (typeof SES_LIE_KINDS)[number];

/** Genuinely signed lies from elsewhere: a correct receiver keeps them and no attempt counts them. */
export const SES_LIES_FROM_ELSEWHERE: readonly SesLieKind[] = ['other-account', 'other-configuration-set'];

export const FORGER_AWS_ACCOUNT_ID = '999999999999';
export const FORGER_CONFIGURATION_SET = 'staging-order-mail-events';

const REGION = SANDBOX_SES_REGION;
/** The forged certificate URLs, taken in turn. The S3 ones passed the host pattern before it was pinned. */
export const FORGED_HOST_URLS = [
  'https://sns.s3.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem',
  `https://sns.s3-${REGION}.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem`,
  'https://sns.s3-accelerate.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem',
  `https://sns.${REGION}.amazonaws.com.forger.example/SimpleNotificationService-0f0f0f0f.pem`,
  `https://sns.${REGION}.amazonaws.com:8443/SimpleNotificationService-0f0f0f0f.pem`,
  `http://sns.${REGION}.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem`,
  `https://forger@sns.${REGION}.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem`,
];
export const FORGED_PATH_URLS = [
  `https://sns.${REGION}.amazonaws.com/SimpleNotificationService-0f0f0f0f.pem?from=forger`,
  `https://sns.${REGION}.amazonaws.com//forger.example/SimpleNotificationService-0f0f0f0f.pem`,
  `https://sns.${REGION}.amazonaws.com/forger/../SimpleNotificationService-forger.pem`,
];

export interface SesLieRequest {
  body: string;
  headers: Record<string, string>;
  /** The notification's MessageId: the event id the receiver would store. */
  eventIds: string[];
  /** The replay token the receiver would keep (the MessageId). */
  token: string;
}

/** The forger: a signer of its own, with its own certificate, naming our topic. */
export class SnsForger {
  readonly sns: SandboxSns = new Sns();
  private turn = 0;

  /** The forger's certificate, served at whatever URL it names. */
  get certificatePem(): string {
    return this.sns.certificatePem;
  }

  /** The request of one lie of `kind` about `message` (sent by our workers, taken by SES or not). */
  lie(
    kind: SesLieKind,
    message: ReceivedMessage,
    genuine: SandboxSns,
    now: Date,
    staleByMs: number,
  ): SesLieRequest {
    this.turn += 1;
    const messageId = randomUUID();
    const event = (source: { account?: string; configurationSet?: string } = {}) =>
      genuine.sesEvent(message, 'Send', now, source);
    const pick = (urls: readonly string[]) => urls[this.turn % urls.length]!;
    const notification =
      kind === 'forged-host'
        ? this.sns.notification(event(), {
            messageId,
            timestamp: now,
            signingCertUrl: pick(FORGED_HOST_URLS),
          })
        : kind === 'forged-path'
          ? this.sns.notification(event(), {
              messageId,
              timestamp: now,
              signingCertUrl: pick(FORGED_PATH_URLS),
            })
          : kind === 'forged-signature'
            ? this.sns.notification(event(), {
                messageId,
                timestamp: now,
                signingCertUrl: genuine.certificateUrl,
              })
            : kind === 'stale-timestamp'
              ? genuine.notification(event(), { messageId, timestamp: new Date(now.getTime() - staleByMs) })
              : kind === 'other-account'
                ? genuine.notification(event({ account: FORGER_AWS_ACCOUNT_ID }), {
                    messageId,
                    timestamp: now,
                  })
                : genuine.notification(event({ configurationSet: FORGER_CONFIGURATION_SET }), {
                    messageId,
                    timestamp: now,
                  });
    return {
      body: JSON.stringify(notification),
      headers: genuine.headers(notification),
      eventIds: [messageId],
      token: messageId,
    };
  }

  /**
   * How the receiver fetches signing certificates in the chaos run: the genuine certificate at the genuine
   * SNS's one URL, the forger's at any other URL the receiver asks for (SnsCertificateOptions.fetchPem).
   */
  network(genuine: SandboxSns): (url: string) => Promise<Buffer> {
    const genuineUrl = genuine.certificateUrl;
    return async (url) => Buffer.from(url === genuineUrl ? genuine.certificatePem : this.certificatePem);
  }
}
