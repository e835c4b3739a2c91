// MAIL_VERIFY_* and the webhook receiver's variables: on by default where the provider can verify, the
// provider's documented figures as defaults, every problem reported at once, and every variable in
// .env.example.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/loadConfig';
import { MAIL_PROVIDER_FACTS } from '../../src/mail/providers/mailProvider';
import { readVerificationConfig } from '../../src/verification/verificationConfig';
import { loadWebhookConfig } from '../../src/webhooks/webhookConfig';
import { startMailSandbox } from '../../packages/sandbox/src/mailSandbox';

const root = path.join(__dirname, '..', '..');

function verification(env: Record<string, string>, provider: Parameters<typeof readVerificationConfig>[1]) {
  const problems: string[] = [];
  return { config: readVerificationConfig(env, provider, problems), problems };
}

describe('readVerificationConfig', () => {
  it('is on by default with the provider’s documented settle delay and retention', () => {
    for (const provider of ['generic', 'postmark', 'mailgun', 'sendgrid'] as const) {
      const facts = MAIL_PROVIDER_FACTS[provider].verification!;
      expect(verification({}, provider)).toEqual({
        problems: [],
        config: expect.objectContaining({
          settleDelayMs: facts.settleDelayMs,
          retentionMs: facts.retentionMs,
        }) as unknown,
      });
    }
    expect(MAIL_PROVIDER_FACTS.mailgun.verification?.settleDelayMs).toBe(30 * 60 * 1000);
  });

  it('is off for Resend and SMTP, and when asked; MAIL_VERIFY=on where nothing can be asked is a problem', () => {
    expect(verification({}, 'resend')).toEqual({ config: null, problems: [] });
    expect(verification({}, 'smtp')).toEqual({ config: null, problems: [] });
    expect(verification({ MAIL_VERIFY: 'off' }, 'postmark')).toEqual({ config: null, problems: [] });
    expect(verification({ MAIL_VERIFY: 'on' }, 'resend').problems).toEqual([
      expect.stringMatching(/MAIL_VERIFY=on, but MAIL_PROVIDER=resend offers no way/) as unknown,
    ]);
  });

  it('reports every bad value at once', () => {
    const { problems } = verification(
      {
        MAIL_VERIFY: 'maybe',
        MAIL_VERIFY_SETTLE_DELAY_MS: '-1',
        MAIL_VERIFY_LOOKUP_TIMEOUT_MS: '5000',
        MAIL_VERIFY_DEADLINE_MS: '1000',
        MAIL_VERIFY_RETENTION_MS: '10',
      },
      'generic',
    );
    expect(problems).toEqual([
      expect.stringMatching(/^MAIL_VERIFY must be on or off/) as unknown,
      expect.stringMatching(/^MAIL_VERIFY_SETTLE_DELAY_MS must be a positive integer/) as unknown,
      expect.stringMatching(/^MAIL_VERIFY_DEADLINE_MS \(1000\) must be at least/) as unknown,
      expect.stringMatching(/^MAIL_VERIFY_RETENTION_MS \(10\) must be longer than/) as unknown,
    ]);
  });

  it('reaches the worker configuration, and its problems are loadConfig’s', () => {
    const base = {
      DATABASE_URL: 'postgres://u:p@localhost/shop',
      MAIL_DEPLOYMENT_ID: 'test-deployment',
      MAIL_API_KEY: 'k',
      MAIL_API_BASE_URL: 'http://x',
    };
    expect(loadConfig({ ...base, MAIL_VERIFY_SETTLE_DELAY_MS: '12000' }).verification).toMatchObject({
      settleDelayMs: 12_000,
    });
    expect(() => loadConfig({ ...base, MAIL_VERIFY: 'yes' })).toThrow(ConfigError);
  });
});

describe('a settle delay below what the provider documents, and retention per plan (issue 22, finding 4)', () => {
  const base = {
    DATABASE_URL: 'postgres://u:p@localhost/shop',
    MAIL_DEPLOYMENT_ID: 'test-deployment',
    MAIL_API_KEY: 'k',
    MAIL_PROVIDER: 'mailgun',
    MAILGUN_DOMAIN: 'mg.example.com',
  };

  it('Mailgun with MAIL_VERIFY_SETTLE_DELAY_MS=1000 is refused at start, with the documented figure named', () => {
    let error: unknown = null;
    try {
      loadConfig({ ...base, MAIL_VERIFY_SETTLE_DELAY_MS: '1000', MAIL_VERIFY_LOOKUP_TIMEOUT_MS: 'x' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    // Every problem at once: the settle delay and the unrelated bad timeout in the same error.
    expect((error as ConfigError).problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^MAIL_VERIFY_SETTLE_DELAY_MS \(1000\) is below what mailgun documents \(1800000 ms/,
        ) as unknown,
        expect.stringMatching(/^MAIL_VERIFY_LOOKUP_TIMEOUT_MS must be a positive integer/) as unknown,
      ]),
    );
  });

  it('an explicit reason lets a shorter delay through, and the configuration keeps the reason', () => {
    const config = loadConfig({
      ...base,
      MAIL_VERIFY_SETTLE_DELAY_MS: '1000',
      MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'a sandbox that indexes within 300 ms',
    });
    expect(config.verification).toMatchObject({
      settleDelayMs: 1_000,
      settleDelayOverrideReason: 'a sandbox that indexes within 300 ms',
    });
  });

  it('Mailgun keeps what its lookup searches for 1 day by default (free plans); a paid plan sets its own', () => {
    expect(loadConfig(base).verification?.retentionMs).toBe(24 * 60 * 60 * 1000);
    expect(
      loadConfig({ ...base, MAIL_VERIFY_RETENTION_MS: String(30 * 86_400_000) }).verification?.retentionMs,
    ).toBe(30 * 86_400_000);
  });
});

describe('loadWebhookConfig', () => {
  it('takes the keys as the providers show them and refuses a receiver with nothing to receive', async () => {
    const sandbox = await startMailSandbox();
    try {
      const config = loadWebhookConfig({
        WEBHOOK_DATABASE_URL: 'postgres://u:p@localhost/shop',
        SENDGRID_WEBHOOK_PUBLIC_KEY: sandbox.webhookKeys.sendgridPublicKey,
        WEBHOOK_BIND_ADDRESS: '127.0.0.1:0',
      });
      expect(config).toMatchObject({
        host: '127.0.0.1',
        port: 0,
        mailgunSigningKey: null,
        maxAgeMs: 300_000,
      });
      expect(config.sendgridPublicKey?.asymmetricKeyType).toBe('ec');
    } finally {
      await sandbox.close();
    }
    expect(() => loadWebhookConfig({ WEBHOOK_DATABASE_URL: 'postgres://x/y' })).toThrow(/nothing to receive/);
    expect(() =>
      loadWebhookConfig({ WEBHOOK_DATABASE_URL: 'mysql://x', SENDGRID_WEBHOOK_PUBLIC_KEY: 'bm90IGEga2V5' }),
    ).toThrow(/DATABASE_URL must be[\s\S]*SENDGRID_WEBHOOK_PUBLIC_KEY is not an EC public key/);
  });
});

it('.env.example lists every verification and webhook receiver variable', () => {
  const listed = readFileSync(path.join(root, '.env.example'), 'utf8');
  const sources = ['src/verification/verificationConfig.ts', 'src/webhooks/webhookConfig.ts'].map((file) =>
    readFileSync(path.join(root, file), 'utf8'),
  );
  const names = new Set(
    sources.flatMap((source) =>
      [...source.matchAll(/'((?:MAIL_VERIFY|WEBHOOK|SENDGRID_WEBHOOK|MAILGUN_WEBHOOK)[A-Z0-9_]*)'/g)].map(
        (match) => match[1]!,
      ),
    ),
  );
  expect(names.size).toBeGreaterThanOrEqual(10);
  expect([...names].filter((name) => !new RegExp(`^${name}=`, 'm').test(listed))).toEqual([]);
});
