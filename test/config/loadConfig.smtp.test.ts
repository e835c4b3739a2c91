// MAIL_PROVIDER=smtp: the relay's settings, their defaults, and the combinations refused before a worker starts.

import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { problemsOf } from '../support/configProblems';

const BASE = { DATABASE_URL: 'postgres://u:p@localhost:5432/shop', MAIL_PROVIDER: 'smtp' };

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

  it('the send timeout leaves room for the SMTP connect, which comes before the dispatch fence', () => {
    const env = {
      ...BASE,
      SMTP_HOST: 'smtp.example.com',
      MAIL_OVERALL_TIMEOUT_MS: '3000',
      MAIL_CONNECT_TIMEOUT_MS: '5000',
      SEND_ACTIVITY_TIMEOUT_MS: '8000',
    };
    // 3000 after the fence + 1000 to report + 2000 before the fence + 5000 to connect = 11000.
    expect(problemsOf(env)).toEqual([
      expect.stringMatching(
        /^SEND_ACTIVITY_TIMEOUT_MS \(8000\) must be at least 11000: .*MAIL_CONNECT_TIMEOUT_MS \(5000, SMTP connects before the fence\)/,
      ),
    ]);
    // The same timeouts over HTTP need no connect before the fence: 3000 + 1000 + 2000 fits in 8000.
    const { MAIL_PROVIDER: _smtp, SMTP_HOST: _host, ...http } = env;
    expect(() =>
      loadConfig({
        ...http,
        MAIL_API_BASE_URL: 'https://mail.example.com',
        MAIL_API_KEY: 'k',
        MAIL_DEPLOYMENT_ID: 'test-deployment',
      }),
    ).not.toThrow();
    expect(() => loadConfig({ ...env, MAIL_CONNECT_TIMEOUT_MS: '2000' })).not.toThrow();
  });

  it('other providers have no SMTP part', () => {
    expect(
      loadConfig({
        DATABASE_URL: BASE.DATABASE_URL,
        MAIL_DEPLOYMENT_ID: 'test-deployment',
        MAIL_API_KEY: 'k',
        MAIL_API_BASE_URL: 'http://x',
      }).smtp,
    ).toBeNull();
  });
});
