// The product and the sandbox each implement the providers' formats from the providers' documentation
// (packages/sandbox/src/providerFormats.ts imports nothing of src/). Where they must meet, they do: the same
// provider names, SES's path, signing name and tags, the send key in an SES tag both ways, Mailgun's webhook
// signature, and the text SNS signs. Two implementations agreeing is the evidence; one shared would be none.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import * as sandbox from '../../packages/sandbox/src/providerFormats';
import { sendKeyOfSesTag, sesTagValue } from '../../src/evidence/messageIdentity';
import { orderConfirmationSendKey } from '../../src/mail/sendKey';
import { MAIL_PROVIDER_NAMES } from '../../src/mail/providers/mailProvider';
import { SES_SEND_PATH, SES_SIGNING_SERVICE, SES_TAGS } from '../../src/mail/providers/ses';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { snsStringToSign } from '../../src/webhooks/snsWebhook';

// Fixed, so a failure names the same case on every run.
const SEED = 38;

it('names the same providers and the same SES request', () => {
  expect([...sandbox.PROVIDER_NAMES].sort()).toEqual([...MAIL_PROVIDER_NAMES].sort());
  expect(sandbox.SES_SEND_PATH).toBe(SES_SEND_PATH);
  expect(sandbox.SES_SIGNING_SERVICE).toBe(SES_SIGNING_SERVICE);
  expect(sandbox.SES_TAGS).toEqual(SES_TAGS);
});

it('writes a send key into an SES tag alike, and each reads back the key the other wrote', () => {
  const realKeys = fc
    .tuple(
      fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/),
      fc.nat({ max: 10 ** 12 }),
      fc.nat({ max: 9 }),
    )
    .map(([deployment, order, resend]) => orderConfirmationSendKey(deployment, String(order), resend));
  fc.assert(
    fc.property(fc.oneof(realKeys, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 })), (key) => {
      const tag = sesTagValue(key);
      expect(sandbox.sesTagValue(key)).toBe(tag);
      expect(sandbox.sendKeyOfSesTag(tag)).toBe(key);
      expect(sendKeyOfSesTag(sandbox.sesTagValue(key))).toBe(key);
    }),
    { seed: SEED, numRuns: 500 },
  );
});

it('refuses the same SES tag values: outside the alphabet, too long, or not a canonical encoding', () => {
  const tagLike = fc.stringMatching(/^[A-Za-z0-9_=+/ -]{0,300}$/);
  fc.assert(
    fc.property(tagLike, (value) => {
      expect(sandbox.sendKeyOfSesTag(value)).toBe(sendKeyOfSesTag(value));
    }),
    { seed: SEED, numRuns: 500 },
  );
  for (const value of ['', 'A', 'QQ==', 'QR', 'a/b', 'x'.repeat(257)]) {
    expect([value, sandbox.sendKeyOfSesTag(value)]).toEqual([value, sendKeyOfSesTag(value)]);
  }
});

it("signs a Mailgun webhook as the product's receiver checks it", () => {
  fc.assert(
    fc.property(fc.string(), fc.stringMatching(/^[0-9]{1,12}$/), fc.string(), (key, timestamp, token) => {
      expect(sandbox.mailgunSignature(key, timestamp, token)).toBe(mailgunSignature(key, timestamp, token));
    }),
    { seed: SEED, numRuns: 200 },
  );
});

it('takes the same text for an SNS signature, for each message type, with and without a subject', () => {
  const common = {
    Message: '{"eventType":"Send"}\nline two',
    MessageId: '22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324',
    Timestamp: '2026-12-07T02:00:00.000Z',
    TopicArn: 'arn:aws:sns:us-east-1:000000000000:order-mail-events',
  };
  const confirmation = {
    ...common,
    SubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=x',
    Token: 't0k3n',
  };
  const messages: Record<string, unknown>[] = [
    { ...common, Type: 'Notification' },
    { ...common, Type: 'Notification', Subject: 'Amazon SES Email Event Notification' },
    { ...common, Type: 'Notification', Subject: '', UnsubscribeURL: 'https://example.invalid/' },
    { ...confirmation, Type: 'SubscriptionConfirmation' },
    { ...confirmation, Type: 'UnsubscribeConfirmation' },
  ];
  for (const message of messages) {
    const text = snsStringToSign(message);
    expect(text).not.toBeNull();
    expect(sandbox.snsStringToSign(message)).toBe(text);
  }
  // A field the signature covers is missing: neither has a text to check.
  const { Token: _token, ...noToken } = { ...confirmation, Type: 'SubscriptionConfirmation' };
  expect([sandbox.snsStringToSign(noToken), snsStringToSign(noToken)]).toEqual([null, null]);
});
