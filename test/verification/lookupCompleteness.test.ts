// Issue 22, finding 2: a lookup's answer says whether it is complete, and an answer that is not about our
// question never reads as "not found". Real HTTP over loopback against the sandbox, whose lookups lie on
// purpose (packages/sandbox/src/lookupLies.ts): they hand out one entry per page, ignore the filter, mix in
// other orders' or another deployment's messages. Each answer is judged by the evidence rules
// (src/evidence/).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { LookupLieKind } from '../../packages/sandbox/src/lookupLies';
import { createProviderAdapter } from '../../src/mail/createMailTransport';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { OutgoingMail } from '../../src/mail/types';
import { destinationOfMailApi } from '../../src/evidence/destination';
import { judgeLookup } from '../../src/evidence/evidenceRules';
import { createLookupClient, createLookupPool } from '../../src/verification/lookupClient';
import { sendKeyOf } from '../../src/verification/sendKey';
import { TEST_MAILGUN_DOMAIN, testProviderMailClient } from '../support/testKit';

let sandbox: MailSandbox;
const closers: Array<() => Promise<void>> = [];
let nextOrder = 9_300_000;

beforeAll(async () => {
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 0 } });
  closers.push(() => sandbox.close());
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

function mailApi(provider: MailProviderName) {
  return {
    provider,
    baseUrl: sandbox.url,
    apiKey: 'sandbox-key',
    mailgunDomain: TEST_MAILGUN_DOMAIN,
    postmarkMessageStream: 'outbound',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 2,
  };
}

function mail(orderId: string): OutgoingMail {
  return {
    orderId,
    to: 'customer@example.com',
    from: 'Shop <shop@example.com>',
    replyTo: null,
    subject: 'ご注文ありがとうございます',
    text: `ご注文番号: ${orderId}\n`,
    html: `<p>ご注文番号: ${orderId}</p>`,
  };
}

async function send(provider: MailProviderName, orderId: string, times = 1): Promise<void> {
  const transport = testProviderMailClient(provider, sandbox.url);
  try {
    for (let i = 0; i < times; i++) {
      expect(await transport.send(mail(orderId))).toMatchObject({ outcome: 'accepted' });
    }
  } finally {
    await transport.close();
  }
}

/** Asks the provider about the order's first send, and judges the answer as the verify activity would. */
async function ask(provider: MailProviderName, orderId: string) {
  const adapter = createProviderAdapter(mailApi(provider));
  const pool = createLookupPool(sandbox.url, { connections: 2, connectTimeoutMs: 1_000, timeoutMs: 2_000 });
  closers.push(() => pool.close());
  const client = createLookupClient({
    adapter: adapter.lookup!,
    baseUrl: sandbox.url,
    dispatcher: pool,
    timeoutMs: 2_000,
  });
  const destination = destinationOfMailApi(mailApi(provider));
  const sendKey = sendKeyOf({ orderId });
  const answer = await client.lookUp({ orderId, sendKey, destination });
  if (answer.kind === 'failed') return { answer, verdict: null };
  const now = new Date();
  const verdict = judgeLookup({
    // Dispatched long enough ago for "not found" to count by time: only completeness can stop it here.
    attempt: {
      orderId,
      attempt: 1,
      sendKey,
      destination,
      dispatchedAt: new Date(now.getTime() - 3_600_000),
      sendTimeoutMs: 1_000,
      keyFirstDispatchedAt: new Date(now.getTime() - 3_600_000),
    },
    asking: destination,
    answer,
    now,
    timing: { settleDelayMs: 1_000, retentionMs: null, fallbackSendTimeoutMs: 1_000 },
  });
  return { answer, verdict };
}

/** From now on every lookup tells this lie (the messages sent so far stay). */
function lie(kind: LookupLieKind): void {
  sandbox.setLookupLies({ rates: [{ kind, probability: 1 }], lagMs: 0 });
}

describe.each(['postmark', 'mailgun'] as const)('%s: an answer in pages', (provider) => {
  it('is read to its last page: every entry of the send, and complete only then', async () => {
    const orderId = String(nextOrder++);
    sandbox.reset();
    await send(provider, orderId, 3);
    lie('paginate');
    const { answer, verdict } = await ask(provider, orderId);
    expect(answer).toMatchObject({ kind: 'entries', complete: true });
    expect(answer.kind === 'entries' ? answer.entries.length : -1).toBe(3);
    expect(verdict).toMatchObject({ kind: 'found' });
    // One entry per page: three pages and the one that says there is no more (more for Postmark's two
    // status lists), each told as a lie.
    expect(sandbox.lookupLiesTold().paginate).toBeGreaterThanOrEqual(4);
  });

  it('an answer mixing in other orders, or another deployment of the same order, proves nothing', async () => {
    for (const kind of ['other-orders', 'other-deployment', 'ignore-filter'] as const) {
      sandbox.reset();
      await send(provider, String(nextOrder++));
      const orderId = String(nextOrder++);
      lie(kind);
      // Our order was never sent: an honest lookup would say "not found"; these answers cannot.
      const { verdict } = await ask(provider, orderId);
      expect({ kind, verdict: verdict?.kind }).toEqual({ kind, verdict: 'inconclusive' });
    }
  });
});

describe('generic: a gateway that ignores the order_id filter', () => {
  it('returns other orders: inconclusive, never "not found"', async () => {
    for (const kind of ['ignore-filter', 'other-orders'] as const) {
      sandbox.reset();
      await send('generic', String(nextOrder++));
      const orderId = String(nextOrder++);
      lie(kind);
      const { answer, verdict } = await ask('generic', orderId);
      expect(answer.kind === 'entries' ? answer.entries.length : 0).toBeGreaterThan(0);
      expect({ kind, verdict: verdict?.kind }).toEqual({ kind, verdict: 'inconclusive' });
    }
  });

  it("another deployment's message of the same order is not ours, and the filter held: not found stands", async () => {
    sandbox.reset();
    const orderId = String(nextOrder++);
    lie('other-deployment');
    const { verdict } = await ask('generic', orderId);
    expect(verdict).toMatchObject({ kind: 'not_found' });
  });

  it('an honest answer with an earlier send of the same order (another key) still says not found', async () => {
    sandbox.reset();
    const orderId = String(nextOrder++);
    // An operator's re-send: the first send's key differs from the one asked about.
    const transport = testProviderMailClient('generic', sandbox.url);
    await transport.send({ ...mail(orderId), sendKey: `order-confirmation/default/${orderId}/7` });
    await transport.close();
    const { verdict } = await ask('generic', orderId);
    expect(verdict).toMatchObject({ kind: 'not_found' });
  });
});

describe.each(['generic', 'postmark', 'mailgun'] as const)('%s: a lookup that fails', (provider) => {
  it('is a failure to retry, counted as a lie', async () => {
    sandbox.reset();
    lie('fail');
    const { answer } = await ask(provider, String(nextOrder++));
    expect(answer).toMatchObject({ kind: 'failed', reason: 'lookup answered HTTP 503' });
    expect(sandbox.lookupLiesTold().fail).toBe(1);
  });
});
