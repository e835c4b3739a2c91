// The chaos run's SNS forger and SNS delivery (packages/sandbox/src/snsLies.ts,
// packages/sandbox/src/snsDeliveryPolicy.ts): every certificate URL it forges is one the receiver's pinned
// check refuses, while the genuine sandbox SNS names one it takes; the S3 ones are the reason the profile
// exists (the host pattern alone let them through); and the sandbox retries by the very delivery policy
// docs/providers.md gives.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandboxSns } from '../../packages/sandbox/src/sns';
import {
  DOCUMENTED_SNS_DELIVERY_POLICY,
  policyRetryingEvery,
  snsRetryDelaysMs,
} from '../../packages/sandbox/src/snsDeliveryPolicy';
import { FORGED_HOST_URLS, FORGED_PATH_URLS, SnsForger } from '../../packages/sandbox/src/snsLies';
import { DEFAULT_SNS_CERT_HOST_PATTERN, whyUntrustedSnsUrl } from '../../src/webhooks/snsWebhook';

const settings = { certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN) };

describe('the forger', () => {
  it('forges only certificate URLs the pinned check refuses; the genuine SNS names one it takes', () => {
    for (const url of [...FORGED_HOST_URLS, ...FORGED_PATH_URLS]) {
      expect(whyUntrustedSnsUrl(url, settings, 'certificate'), url).not.toBeNull();
    }
    const genuine = new SandboxSns();
    expect(whyUntrustedSnsUrl(genuine.useAwsCertificateUrl(), settings, 'certificate')).toBeNull();
  });

  it("S3's names for a bucket called sns match the host pattern the check had before it was pinned", () => {
    const s3 = FORGED_HOST_URLS.filter((url) => new URL(url).hostname.startsWith('sns.s3'));
    expect(s3).toHaveLength(3);
    for (const url of s3) expect(settings.certHostPattern.test(new URL(url).hostname), url).toBe(true);
  });

  it('serves the genuine certificate at the genuine URL and its own at any other', async () => {
    const genuine = new SandboxSns();
    genuine.useAwsCertificateUrl();
    const forger = new SnsForger();
    const fetch = forger.network(genuine);
    expect((await fetch(genuine.certificateUrl)).toString()).toBe(genuine.certificatePem);
    expect((await fetch(FORGED_HOST_URLS[0]!)).toString()).toBe(forger.certificatePem);
    expect(forger.certificatePem).not.toBe(genuine.certificatePem);
  });
});

describe('the sandbox SNS delivery policy', () => {
  it('is the one docs/providers.md gives the subscription, retrying every 60 s for 59 retries', () => {
    const doc = readFileSync(path.join(__dirname, '../../docs/providers.md'), 'utf8');
    const block = /```json\n(\{\n {2}"healthyRetryPolicy"[\s\S]*?)```/.exec(doc);
    expect(block, 'the delivery policy block in docs/providers.md').not.toBeNull();
    expect(JSON.parse(block![1]!)).toEqual(DOCUMENTED_SNS_DELIVERY_POLICY);
    const delays = snsRetryDelaysMs(DOCUMENTED_SNS_DELIVERY_POLICY);
    expect(delays).toHaveLength(59);
    expect(new Set(delays)).toEqual(new Set([60_000]));
    expect(snsRetryDelaysMs(policyRetryingEvery(5))).toEqual(Array.from({ length: 59 }, () => 5_000));
  });
});
