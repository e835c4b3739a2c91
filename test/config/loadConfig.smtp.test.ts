// MAIL_PROVIDER=smtp: the relay's settings, their defaults, and the combinations refused before a worker starts.

import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/loadConfig';

const BASE = { DATABASE_URL: 'postgres://u:p@localhost:5432/shop', MAIL_PROVIDER: 'smtp' };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('MAIL_PROVIDER=smtp', () => {
  it('needs SMTP_HOST only: no MAIL_API_BASE_URL or MAIL_API_KEY; STARTTLS required, port 587 by default', () => {
    expect(problemsOf(BASE)).toEqual(['SMTP_HOST is required.']);
    const config = loadConfig({ ...BASE, SMTP_HOST: 'smtp.example.com' });
    expect(config.smtp).toMatchObject({
      host: 'smtp.example.com',
      port: 587,
      secure: false,
      starttls: 'require',
      user: null,
      poolSize: 5,
      overallTimeoutMs: 40_000,
    });
  });

  it('implicit TLS defaults to port 465; credentials and pool size are read', () => {
    const config = loadConfig({
      ...BASE,
      SMTP_HOST: 'email-smtp.eu-west-1.amazonaws.com',
      SMTP_SECURE: 'true',
      SMTP_USER: 'AKIA',
      SMTP_PASSWORD: 'secret',
      SMTP_POOL_SIZE: '3',
    });
    expect(config.smtp).toMatchObject({
      port: 465,
      secure: true,
      user: 'AKIA',
      password: 'secret',
      poolSize: 3,
    });
  });

  it('refuses half the credentials, and credentials over a session that may stay unencrypted', () => {
    expect(problemsOf({ ...BASE, SMTP_HOST: 'h', SMTP_USER: 'u' })).toEqual([
      'SMTP_USER and SMTP_PASSWORD go together: set both (AUTH) or neither (no AUTH).',
    ]);
    const problems = problemsOf({
      ...BASE,
      SMTP_HOST: 'h',
      SMTP_USER: 'u',
      SMTP_PASSWORD: 'p',
      SMTP_STARTTLS: 'off',
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('unencrypted');
    expect(problems.join()).not.toContain('=p');
  });

  it('other providers have no SMTP part', () => {
    expect(
      loadConfig({ DATABASE_URL: BASE.DATABASE_URL, MAIL_API_KEY: 'k', MAIL_API_BASE_URL: 'http://x' }).smtp,
    ).toBeNull();
  });
});
