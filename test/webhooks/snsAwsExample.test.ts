// The SNS verifier against a message Amazon SNS itself signed (test/webhooks/fixtures/aws-sns-example, with
// where it comes from): an oracle besides our own signer. The certificate is served over loopback for its real
// SigningCertURL, and the clock is set inside the certificate's validity; one byte changed in any signed field
// or in the signature must fail, and so must the same message read after the certificate expired.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SNS_CERT_HOST_PATTERN,
  readSnsDelivery,
  SnsCertificates,
} from '../../src/webhooks/snsWebhook';

const fixtures = path.join(__dirname, 'fixtures', 'aws-sns-example');
const genuine = JSON.parse(readFileSync(path.join(fixtures, 'notification.json'), 'utf8')) as Record<
  string,
  string
>;
const pem = readFileSync(
  path.join(fixtures, 'SimpleNotificationService-56e67fcb41f6fec09b0196692625d385.pem'),
);
/** Two minutes after SNS signed it, inside the certificate's validity (2022-06-29 to 2023-06-03). */
const THEN = new Date('2023-01-17T22:35:14.087Z');

async function verify(message: Record<string, string>, now = THEN) {
  const fetched: string[] = [];
  const certificates = new SnsCertificates({
    fetchPem: (url) => {
      fetched.push(url);
      return Promise.resolve(pem);
    },
  });
  const verdict = await readSnsDelivery({
    headers: { 'x-amz-sns-message-type': 'Notification' },
    rawBody: Buffer.from(JSON.stringify(message)),
    settings: {
      topicArns: new Set([genuine.TopicArn!]),
      certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
    },
    certificates,
    now,
    maxAgeMs: 300_000,
  });
  return { verdict, fetched };
}

describe("AWS's own signed message", () => {
  it('verifies, with the certificate from its own SigningCertURL', async () => {
    const { verdict, fetched } = await verify(genuine);
    // Its Message is no SES event: authentic, and skipped as not ours.
    expect(verdict).toMatchObject({ ok: true, kind: 'notification', topicArn: genuine.TopicArn });
    expect(fetched).toEqual([genuine.SigningCertURL]);
  });

  it('one byte changed in a signed field or in the signature fails', async () => {
    const flipped = (text: string, at: number) =>
      text.slice(0, at) + String.fromCharCode(text.charCodeAt(at) ^ 1) + text.slice(at + 1);
    const signature = Buffer.from(genuine.Signature!, 'base64');
    signature.writeUInt8(signature.readUInt8(17) ^ 1, 17);
    for (const altered of [
      { ...genuine, Message: flipped(genuine.Message!, 3) },
      { ...genuine, MessageId: flipped(genuine.MessageId!, 0) },
      { ...genuine, Timestamp: genuine.Timestamp!.replace('14.087Z', '14.086Z') },
      { ...genuine, Signature: signature.toString('base64') },
    ]) {
      const { verdict } = await verify(altered);
      expect(verdict).toMatchObject({ ok: false, status: 401, problem: 'the signature does not verify' });
    }
  });

  it('after the certificate expired, the same message is refused', async () => {
    const { verdict } = await verify(genuine, new Date('2023-06-04T00:00:00Z'));
    expect(verdict).toMatchObject({
      ok: false,
      status: 401,
      problem: expect.stringMatching(/certificate/) as unknown,
    });
  });
});
