// MAIL_PROVIDERS: the ordered list, each provider's own settings (<PROVIDER>_*), the single-provider names still
// valid for the first, and every problem at once without a secret.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { problemsOf } from '../support/configProblems';

const BASE = { DATABASE_URL: 'postgres://u:p@localhost:5432/shop', MAIL_DEPLOYMENT_ID: 'test-deployment' };
const TWO = {
  ...BASE,
  MAIL_PROVIDERS: 'postmark,mailgun',
  POSTMARK_API_KEY: 'pm-secret-token',
  MAILGUN_API_KEY: 'mg-secret-key',
  MAILGUN_DOMAIN: 'mg.example.com',
};

describe('MAIL_PROVIDERS', () => {
  it('reads each provider with its own key, base URL and sender, in order', () => {
    const config = loadConfig({
      ...TWO,
      MAILGUN_API_BASE_URL: 'http://127.0.0.1:4011',
      MAILGUN_MAIL_FROM: 'Shop <mg@shop.example>',
      MAIL_FROM: 'shop@shop.example',
    });
    expect(config.providers.map((provider) => provider.name)).toEqual(['postmark', 'mailgun']);
    const [postmark, mailgun] = config.providers;
    expect(postmark!.mailApi).toMatchObject({
      apiKey: 'pm-secret-token',
      baseUrl: 'https://api.postmarkapp.com',
    });
    expect(mailgun!.mailApi).toMatchObject({
      apiKey: 'mg-secret-key',
      baseUrl: 'http://127.0.0.1:4011',
      mailgunDomain: 'mg.example.com',
    });
    expect(postmark!.mail.from).toBe('shop@shop.example');
    expect(mailgun!.mail.from).toBe('Shop <mg@shop.example>');
    // The first provider is the single-provider view everything else reads.
    expect(config.mailApi.provider).toBe('postmark');
    expect(config.providerHealth).toEqual({ skipAfterFailures: 5, skipForMs: 30_000 });
  });

  it('keeps the MAIL_* names valid for the first provider, and only for it', () => {
    const config = loadConfig({ ...BASE, MAIL_PROVIDER: 'postmark', MAIL_API_KEY: 'single-key' });
    expect(config.providers).toHaveLength(1);
    expect(config.mailApi.apiKey).toBe('single-key');
    const problems = problemsOf({
      ...BASE,
      MAIL_PROVIDERS: 'postmark,mailgun',
      MAIL_API_KEY: 'single-key',
      MAILGUN_DOMAIN: 'mg.example.com',
    });
    // MAIL_API_KEY serves postmark; mailgun must have its own.
    expect(problems).toEqual(['MAILGUN_API_KEY is required.']);
  });

  it('gives each provider its own settle delay', () => {
    const config = loadConfig({
      ...TWO,
      POSTMARK_VERIFY_SETTLE_DELAY_MS: '40000',
      MAILGUN_VERIFY_SETTLE_DELAY_MS: '2000',
      MAILGUN_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'a sandbox that indexes at once',
    });
    expect(config.providers.map((provider) => provider.verification?.settleDelayMs)).toEqual([40_000, 2_000]);
  });

  it('reports every problem at once, naming each provider’s own variables and no secret', () => {
    const problems = problemsOf({
      ...BASE,
      MAIL_PROVIDERS: 'postmark, mailgun,postmark,smtp,frobnitz',
      MAIL_PROVIDER: 'mailgun',
      POSTMARK_API_KEY: 'pm secret with spaces',
      MAILGUN_VERIFY_SETTLE_DELAY_MS: '10',
      MAIL_PROVIDER_SKIP_AFTER_FAILURES: '0',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'MAIL_PROVIDERS names postmark twice; each provider once, in the order to try them.',
        'MAIL_PROVIDERS cannot hold smtp: SMTP is only a single provider (MAIL_PROVIDER=smtp).',
        expect.stringContaining('MAIL_PROVIDERS must list providers from'),
        expect.stringContaining('MAIL_PROVIDER (mailgun) and MAIL_PROVIDERS'),
        'POSTMARK_API_KEY must be printable ASCII without spaces (the value is not shown).',
        'MAILGUN_API_KEY is required.',
        'MAILGUN_DOMAIN is required.',
        expect.stringContaining('MAILGUN_VERIFY_SETTLE_DELAY_MS (10) is below what mailgun documents'),
        expect.stringContaining('MAIL_PROVIDER_SKIP_AFTER_FAILURES must be a positive integer'),
      ]),
    );
    expect(problems.join('\n')).not.toContain('secret');
  });
});

describe('MAIL_PROVIDERS_DRAINING and MAIL_PROVIDERS_FORCE_START_REASON', () => {
  it('reads the draining providers of the list and the force reason; none by default', () => {
    expect(loadConfig(TWO)).toMatchObject({ drainingProviders: [], forceStartReason: null });
    expect(
      loadConfig({
        ...TWO,
        MAIL_PROVIDERS_DRAINING: ' mailgun ',
        MAIL_PROVIDERS_FORCE_START_REASON: 'mailgun account closed by the vendor',
      }),
    ).toMatchObject({
      drainingProviders: ['mailgun'],
      forceStartReason: 'mailgun account closed by the vendor',
    });
  });
  it('refuses a draining provider outside MAIL_PROVIDERS, and a list that drains every provider', () => {
    expect(problemsOf({ ...TWO, MAIL_PROVIDERS_DRAINING: 'ses' })).toEqual([
      expect.stringContaining('MAIL_PROVIDERS_DRAINING names "ses", which is not in MAIL_PROVIDERS'),
    ]);
    expect(problemsOf({ ...TWO, MAIL_PROVIDERS_DRAINING: 'postmark,mailgun' })).toEqual([
      expect.stringContaining('MAIL_PROVIDERS_DRAINING names every provider'),
    ]);
  });
});
