// The runner's verification flags: the demo and chaos verify by default with a provider that can, the settle
// delay stays longer than the sandbox's indexing lag, and the flags refuse what makes no sense.
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import { PROFILES } from '../../dev/demo/profiles';
import { verifies } from '../../dev/demo/verificationOptions';
import { MAIL_PROVIDER_FACTS, MAIL_PROVIDER_NAMES } from '../../src/mail/providers/mailProvider';
import { DEFAULT_INDEXING_LAG_MS } from '../../packages/sandbox/src/lookups';

describe('verification flags', () => {
  it('the demo and chaos send to a provider that verifies, waiting longer than the sandbox takes to index', () => {
    for (const profile of [PROFILES.demo, PROFILES.chaos]) {
      expect(verifies(profile.verification)).toBe(true);
      expect(profile.verification.settleDelayMs).toBeGreaterThan(DEFAULT_INDEXING_LAG_MS);
    }
  });

  it("every provider's documented settle delay is longer than the sandbox's default indexing lag", () => {
    for (const name of MAIL_PROVIDER_NAMES) {
      const facts = MAIL_PROVIDER_FACTS[name].verification;
      if (facts !== null) expect(facts.settleDelayMs).toBeGreaterThan(DEFAULT_INDEXING_LAG_MS);
    }
  });

  it('picks a provider, turns verification off, sets the delay and the verification faults', () => {
    const options = parseRunOptions([
      '--profile',
      'chaos',
      '--provider',
      'postmark',
      '--no-verify',
      '--settle-delay',
      '2.5',
      '--lookup-faults',
      '10%',
      '--webhook-duplicates',
      '0.5',
    ]);
    expect(options).not.toBe('help');
    if (options === 'help') return;
    expect(options.verification).toEqual({
      provider: 'postmark',
      verify: false,
      settleDelayMs: 2_500,
      lookupFaults: 0.1,
      webhookLoss: PROFILES.chaos.verification.webhookLoss,
      webhookDuplicates: 0.5,
      lyingProvider: false,
      receiverOutage: null,
      webhookMaxAgeMs: 300_000,
      snsRetryEveryS: 60,
      lookupReorder: null,
    });
    // The profile itself is left as it was.
    expect(PROFILES.chaos.verification.provider).toBe('generic');
  });

  it("--lying-provider turns the lookups' lies on, off by default in both profiles", () => {
    expect(PROFILES.demo.verification.lyingProvider).toBe(false);
    expect(PROFILES.chaos.verification.lyingProvider).toBe(false);
    const options = parseRunOptions(['--profile', 'chaos', '--lying-provider']);
    expect(options !== 'help' && options.verification.lyingProvider).toBe(true);
  });

  it('Resend verifies nothing (its key makes retries safe), and a provider needs the HTTP transport', () => {
    const resend = parseRunOptions(['--provider', 'resend']);
    expect(resend !== 'help' && verifies(resend.verification)).toBe(false);
    expect(() => parseRunOptions(['--provider', 'brevo'])).toThrow(UsageError);
    expect(() => parseRunOptions(['--transport', 'smtp', '--provider', 'postmark'])).toThrow(
      /--transport smtp/,
    );
    expect(() => parseRunOptions(['--settle-delay', '0'])).toThrow(UsageError);
    expect(() => parseRunOptions(['--lookup-faults', '2'])).toThrow(UsageError);
  });
});
