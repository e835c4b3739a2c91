// Issue 22, finding 3: where the provider can be asked afterwards (the generic API's lookup, Postmark's Messages
// API, Mailgun's events), every 5xx is unknown, so it is verified before anything is sent again. A 503 from a
// load balancer can come after the request was forwarded; calling it not_sent retries without asking and can
// send a second mail. The statuses that prove nothing was processed (408, 429) stay not_sent.
import { describe, expect, it } from 'vitest';
import { createProviderAdapter } from '../../src/mail/createMailTransport';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import { outcomeForStatus } from '../../src/mail/sendOutcomeTable';

const WITH_LOOKUP: MailProviderName[] = ['generic', 'postmark', 'mailgun'];
const FIVE_XX = [500, 501, 502, 503, 504, 507, 520, 522, 599];

function tableOf(provider: MailProviderName) {
  return createProviderAdapter({
    provider,
    baseUrl: 'http://127.0.0.1:1',
    apiKey: 'table-key',
    mailgunDomain: 'mg.example.com',
    postmarkMessageStream: 'outbound',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 1_000,
    connections: 1,
  }).statusTable;
}

describe.each(WITH_LOOKUP)('%s: a provider with a lookup', (provider) => {
  it.each(FIVE_XX)('HTTP %i is unknown, so it is verified, never not_sent', (status) => {
    expect(outcomeForStatus(status, tableOf(provider))).toBe('unknown');
  });

  it('408 and 429 (nothing was processed) stay not_sent; 2xx accepted; 400 rejected', () => {
    const table = tableOf(provider);
    expect(outcomeForStatus(408, table)).toBe('not_sent');
    expect(outcomeForStatus(429, table)).toBe('not_sent');
    expect(outcomeForStatus(202, table)).toBe('accepted');
    expect(outcomeForStatus(400, table)).toBe('rejected');
  });
});
