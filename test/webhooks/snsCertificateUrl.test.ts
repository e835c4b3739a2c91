// Which SigningCertURLs the SNS verifier lets its certificate fetch go to (src/webhooks/snsWebhook.ts), with a
// forger's fetch: whatever URL the check lets through is answered with the forger's own certificate, and a
// Notification signed with the forger's key carries an `accepted` event of one of our orders. Only AWS's
// documented form, https://sns.<region>.amazonaws.com[.cn]/SimpleNotificationService-<hex>.pem, may be asked;
// S3's names for a bucket called "sns" and every other variation are refused before any fetch. Also here: the
// setting that refuses SignatureVersion 1, and the window in which SNS's retries of a message are taken.
import { createSign, X509Certificate, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { makeTestCertificate } from '../../packages/sandbox/src/testCertificate';
import { SnsCertificatesBusyError } from '../../src/webhooks/snsCertificates';
import {
  DEFAULT_SNS_CERT_HOST_PATTERN,
  readSnsDelivery,
  snsStringToSign,
  SnsCertificates,
  type SnsSettings,
} from '../../src/webhooks/snsWebhook';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ses-events';
const MAX_AGE_MS = 300_000;
const forger = makeTestCertificate('sns.forger.test');

/** Serves the forger's certificate for any URL it is asked, and remembers the URLs. */
class ForgersFetch extends SnsCertificates {
  readonly asked: string[] = [];
  override publicKey(url: string): Promise<KeyObject> {
    this.asked.push(url);
    return Promise.resolve(new X509Certificate(forger.pem).publicKey);
  }
}

function signedNotification(
  signingCertUrl: string,
  options: { version?: '1' | '2'; timestamp?: Date; messageId?: string } = {},
): Record<string, unknown> {
  const at = options.timestamp ?? new Date();
  const sendKey = 'order-confirmation/default/4242/0';
  const event = {
    eventType: 'Send',
    mail: {
      timestamp: at.toISOString(),
      messageId: 'forged-1',
      sendingAccountId: '111122223333',
      tags: {
        'ses:configuration-set': ['order-mail-events'],
        order_id: ['4242'],
        send_key: [Buffer.from(sendKey).toString('base64url')],
      },
    },
    send: {},
  };
  const message: Record<string, unknown> = {
    Type: 'Notification',
    MessageId: options.messageId ?? 'aaaaaaaa-1111-2222-3333-444444444444',
    TopicArn: TOPIC,
    Message: JSON.stringify(event),
    Timestamp: at.toISOString(),
    SignatureVersion: options.version ?? '2',
    SigningCertURL: signingCertUrl,
  };
  message.Signature = createSign(options.version === '1' ? 'RSA-SHA1' : 'RSA-SHA256')
    .update(snsStringToSign(message)!, 'utf8')
    .sign(forger.privateKey)
    .toString('base64');
  return message;
}

async function verdictOf(
  message: Record<string, unknown>,
  settings: Partial<SnsSettings> = {},
  now = new Date(),
): Promise<{ verdict: Awaited<ReturnType<typeof readSnsDelivery>>; asked: string[] }> {
  const certificates = new ForgersFetch();
  const verdict = await readSnsDelivery({
    headers: {},
    rawBody: Buffer.from(JSON.stringify(message)),
    settings: {
      topicArns: new Set([TOPIC]),
      certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
      ...settings,
    },
    certificates,
    now,
    maxAgeMs: MAX_AGE_MS,
  });
  return { verdict, asked: certificates.asked };
}

const PEM = 'SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem';

describe('the SigningCertURL', () => {
  it("S3's names for a bucket called sns, and every other form AWS does not use, are refused before a fetch", async () => {
    for (const url of [
      `https://sns.s3.amazonaws.com/${PEM}`,
      `https://sns.s3-accelerate.amazonaws.com/${PEM}`,
      `https://sns.s3-ap-southeast-2.amazonaws.com/${PEM}`,
      `https://sns.s3-external-1.amazonaws.com/${PEM}`,
      `https://sns.s3.us-east-1.amazonaws.com/${PEM}`,
      `https://sns.s3-website-us-east-1.amazonaws.com/${PEM}`,
      `https://sns.us-east-1.amazonaws.com/SimpleNotificationService-forged.pem`,
      `https://sns.us-east-1.amazonaws.com/bucket/${PEM}`,
      `https://sns.us-east-1.amazonaws.com/${PEM}?x=1`,
      `https://sns.us-east-1.amazonaws.com/${PEM}#x`,
      `https://sns.us-east-1.amazonaws.com:443/${PEM}`,
      `https://user@sns.us-east-1.amazonaws.com/${PEM}`,
      `https://sns.us-east-1.amazonaws.com./${PEM}`,
      `https://sns.us-east-1.amazonaws.com/%53impleNotificationService-9c64.pem`,
      `https://sns.cn-north-1.amazonaws.com/${PEM}`,
      `https://sns.us-east-1.amazonaws.com.cn/${PEM}`,
      `https://sns.amazonaws.com/${PEM}`,
      `https://sns.useast1.amazonaws.com/${PEM}`,
      `http://sns.us-east-1.amazonaws.com/${PEM}`,
    ]) {
      const { verdict, asked } = await verdictOf(signedNotification(url));
      expect({ url, ok: verdict.ok, status: verdict.ok ? null : verdict.status, asked }).toEqual({
        url,
        ok: false,
        status: 401,
        asked: [],
      });
    }
  });

  it("AWS's own form is asked for, in every partition", async () => {
    for (const url of [
      `https://sns.us-east-1.amazonaws.com/${PEM}`,
      `https://sns.eu-central-1.amazonaws.com/${PEM}`,
      `https://sns.ap-southeast-2.amazonaws.com/${PEM}`,
      `https://sns.us-gov-west-1.amazonaws.com/${PEM}`,
      `https://sns.cn-north-1.amazonaws.com.cn/${PEM}`,
    ]) {
      const { verdict, asked } = await verdictOf(signedNotification(url));
      expect({ url, ok: verdict.ok, asked }).toEqual({ url, ok: true, asked: [url] });
    }
  });

  it('SNS_CERT_HOST_PATTERN only narrows: a wide pattern lets no S3 name through, a narrow one refuses other regions', async () => {
    const wide = { certHostPattern: /^sns\.[a-z0-9.-]+\.amazonaws\.com$/ };
    const s3 = await verdictOf(signedNotification(`https://sns.s3.amazonaws.com/${PEM}`), wide);
    expect([s3.verdict.ok, s3.asked]).toEqual([false, []]);
    const narrow = { certHostPattern: /^sns\.eu-west-1\.amazonaws\.com$/ };
    const other = await verdictOf(signedNotification(`https://sns.us-east-1.amazonaws.com/${PEM}`), narrow);
    expect([other.verdict.ok, other.asked]).toEqual([false, []]);
    const own = await verdictOf(signedNotification(`https://sns.eu-west-1.amazonaws.com/${PEM}`), narrow);
    expect(own.verdict.ok).toBe(true);
  });
});

describe('SignatureVersion', () => {
  it('with requireSignatureVersion2, a SignatureVersion 1 (SHA1) message is refused and 2 is taken', async () => {
    const url = `https://sns.us-east-1.amazonaws.com/${PEM}`;
    const v1 = await verdictOf(signedNotification(url, { version: '1' }), { requireSignatureVersion2: true });
    expect(v1.verdict).toMatchObject({
      ok: false,
      status: 401,
      problem: expect.stringMatching(/SignatureVersion/) as unknown,
    });
    expect(v1.asked).toEqual([]);
    const v2 = await verdictOf(signedNotification(url, { version: '2' }), { requireSignatureVersion2: true });
    expect(v2.verdict.ok).toBe(true);
    // Without the setting, 1 is still taken (SNS topics sign with 1 unless told otherwise).
    expect((await verdictOf(signedNotification(url, { version: '1' }))).verdict.ok).toBe(true);
  });
});

describe("SNS's retries", () => {
  const url = `https://sns.us-east-1.amazonaws.com/${PEM}`;
  const now = new Date();
  const ago = (ms: number) => new Date(now.getTime() - ms);

  it('a retry keeps its first Timestamp: one signed 50 minutes ago is taken, within SNS_MAX_RETRY_S (default 1 h)', async () => {
    const { verdict } = await verdictOf(signedNotification(url, { timestamp: ago(50 * 60_000) }), {}, now);
    expect(verdict).toMatchObject({ ok: true, kind: 'notification' });
    expect(verdict.ok && verdict.kind === 'notification' ? verdict.delivery.events.length : 0).toBe(1);
  });

  it('older than SNS_MAX_RETRY_S and the clock window, or from the future beyond the window: stale', async () => {
    for (const timestamp of [ago(3_600_000 + MAX_AGE_MS + 1_000), ago(-MAX_AGE_MS - 1_000)]) {
      const { verdict } = await verdictOf(signedNotification(url, { timestamp }), {}, now);
      expect(verdict).toMatchObject({
        ok: false,
        status: 401,
        problem: expect.stringMatching(/stale/) as unknown,
      });
    }
    const shorter = await verdictOf(
      signedNotification(url, { timestamp: ago(20 * 60_000) }),
      { maxRetryMs: 600_000 },
      now,
    );
    expect(shorter.verdict).toMatchObject({ ok: false, status: 401 });
  });
});

describe('certificate fetches busy', () => {
  it('is answered 503 (SNS delivers it again), not 401 (SNS would drop it)', async () => {
    class Busy extends SnsCertificates {
      override publicKey(): Promise<KeyObject> {
        return Promise.reject(new SnsCertificatesBusyError());
      }
    }
    const verdict = await readSnsDelivery({
      headers: {},
      rawBody: Buffer.from(JSON.stringify(signedNotification(`https://sns.us-east-1.amazonaws.com/${PEM}`))),
      settings: { topicArns: new Set([TOPIC]), certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN) },
      certificates: new Busy(),
      now: new Date(),
      maxAgeMs: MAX_AGE_MS,
    });
    expect(verdict).toMatchObject({ ok: false, status: 503 });
  });
});
