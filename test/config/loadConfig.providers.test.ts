// Choosing the mail provider by configuration: defaults per provider, overrides, the idempotency window, and
// problems reported together without ever showing the key.

import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { problemsOf } from '../support/configProblems';

const BASE = {
  DATABASE_URL: 'postgres://u:p@localhost:5432/shop',
  MAIL_DEPLOYMENT_ID: 'test-deployment',
  MAIL_API_KEY: 'key-123',
};

describe('MAIL_PROVIDER', () => {
  it('generic is the default and needs MAIL_API_BASE_URL', () => {
    expect(problemsOf(BASE)).toEqual(['MAIL_API_BASE_URL is required.']);
    const config = loadConfig({ ...BASE, MAIL_API_BASE_URL: 'http://127.0.0.1:4010/' });
    expect(config.mailApi).toMatchObject({ provider: 'generic', baseUrl: 'http://127.0.0.1:4010' });
    expect(config.workflow.idempotency).toBeNull();
  });

  it.each([
    ['sendgrid', 'https://api.sendgrid.com'],
    ['postmark', 'https://api.postmarkapp.com'],
    ['resend', 'https://api.resend.com'],
  ])('%s defaults to %s', (provider, baseUrl) => {
    expect(loadConfig({ ...BASE, MAIL_PROVIDER: provider }).mailApi).toMatchObject({ provider, baseUrl });
  });

  it('mailgun needs its sending domain and picks the base by region', () => {
    expect(problemsOf({ ...BASE, MAIL_PROVIDER: 'mailgun' })).toEqual(['MAILGUN_DOMAIN is required.']);
    const us = loadConfig({ ...BASE, MAIL_PROVIDER: 'mailgun', MAILGUN_DOMAIN: 'mg.example.com' });
    expect(us.mailApi).toMatchObject({ baseUrl: 'https://api.mailgun.net', mailgunDomain: 'mg.example.com' });
    const eu = loadConfig({
      ...BASE,
      MAIL_PROVIDER: 'mailgun',
      MAILGUN_DOMAIN: 'mg.example.com',
      MAILGUN_REGION: 'eu',
    });
    expect(eu.mailApi.baseUrl).toBe('https://api.eu.mailgun.net');
  });

  it('MAIL_API_BASE_URL overrides any provider default (the sandbox, a proxy)', () => {
    const config = loadConfig({
      ...BASE,
      MAIL_PROVIDER: 'resend',
      MAIL_API_BASE_URL: 'http://127.0.0.1:9/x/',
    });
    expect(config.mailApi.baseUrl).toBe('http://127.0.0.1:9/x');
  });

  it('postmark takes its message stream', () => {
    expect(loadConfig({ ...BASE, MAIL_PROVIDER: 'postmark' }).mailApi.postmarkMessageStream).toBe('outbound');
    expect(
      loadConfig({ ...BASE, MAIL_PROVIDER: 'postmark', POSTMARK_MESSAGE_STREAM: 'orders' }).mailApi
        .postmarkMessageStream,
    ).toBe('orders');
  });

  it('an unknown provider is named in the problem', () => {
    expect(problemsOf({ ...BASE, MAIL_PROVIDER: 'sparkpost', MAIL_API_BASE_URL: 'http://x.test' })).toEqual([
      expect.stringContaining('MAIL_PROVIDER must be one of generic, sendgrid, postmark, resend, mailgun'),
    ]);
  });
});

describe('the idempotency window', () => {
  it('resend: the documented 24 h with a 1 h safety margin by default', () => {
    expect(loadConfig({ ...BASE, MAIL_PROVIDER: 'resend' }).workflow.idempotency).toEqual({
      windowMs: 86_400_000,
      safetyMarginMs: 3_600_000,
    });
  });

  it('resend: 0 turns retries under the key off; more than documented is refused', () => {
    expect(
      loadConfig({ ...BASE, MAIL_PROVIDER: 'resend', MAIL_IDEMPOTENCY_WINDOW_MS: '0' }).workflow.idempotency,
    ).toBeNull();
    expect(problemsOf({ ...BASE, MAIL_PROVIDER: 'resend', MAIL_IDEMPOTENCY_WINDOW_MS: '90000000' })).toEqual([
      expect.stringContaining('must not exceed the 86400000 ms that resend documents'),
    ]);
  });

  it('resend: a margin that leaves no room for a send is refused', () => {
    expect(
      problemsOf({
        ...BASE,
        MAIL_PROVIDER: 'resend',
        MAIL_IDEMPOTENCY_WINDOW_MS: '3600000',
        MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS: '3600000',
      }),
    ).toEqual([expect.stringContaining('must be less than MAIL_IDEMPOTENCY_WINDOW_MS')]);
  });

  it.each(['generic', 'sendgrid', 'postmark'])(
    '%s has no key: a window is a configuration error',
    (provider) => {
      expect(
        problemsOf({
          ...BASE,
          MAIL_PROVIDER: provider,
          MAIL_API_BASE_URL: 'http://127.0.0.1:1',
          MAIL_IDEMPOTENCY_WINDOW_MS: '1000',
        }),
      ).toEqual([expect.stringContaining('it has no idempotency key')]);
    },
  );
});

describe('identity and secrets', () => {
  it('MAIL_FROM may carry a display name; a subject or sender with a line break is refused', () => {
    const config = loadConfig({ ...BASE, MAIL_PROVIDER: 'resend', MAIL_FROM: 'ショップ <shop@example.com>' });
    expect(config.mail.from).toBe('ショップ <shop@example.com>');
    expect(
      problemsOf({
        ...BASE,
        MAIL_PROVIDER: 'resend',
        MAIL_SUBJECT: 'Thanks\r\nBcc: everyone@example.com',
        MAIL_REPLY_TO: 'not an address',
      }),
    ).toEqual([
      expect.stringContaining('MAIL_REPLY_TO must be an address'),
      expect.stringContaining('MAIL_SUBJECT must not contain line breaks'),
    ]);
  });

  it('a malformed API key is reported without its value', () => {
    const problems = problemsOf({ ...BASE, MAIL_PROVIDER: 'resend', MAIL_API_KEY: 're_secret with space' });
    expect(problems).toEqual([expect.stringContaining('MAIL_API_KEY must be printable ASCII')]);
    expect(problems.join('\n')).not.toContain('re_secret');
  });
});
