// Each provider's lookup over real HTTP against the sandbox's emulation of it: a message sent through the
// provider's adapter is found by its send key once the sandbox's indexing lag has passed, not before, not
// under another send's key, not after the retention; a failing lookup (5xx, a hang past the deadline, a dropped
// connection) is a failure worth retrying, never "not found"; a refused key is inconclusive.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProviderAdapter } from '../../src/mail/createMailTransport';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { OutgoingMail } from '../../src/mail/types';
import { createLookupClient, createLookupPool, type LookupClient } from '../../src/verification/lookupClient';
import { destinationOfMailApi } from '../../src/evidence/destination';
import { entryIsOurs } from '../../src/evidence/evidenceRules';
import type { LookupQuery } from '../../src/evidence/lookupAnswer';
import { sendKeyOf } from '../../src/verification/sendKey';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { TEST_MAILGUN_DOMAIN, testProviderMailClient, waitFor } from '../support/testKit';

const VERIFYING: MailProviderName[] = ['generic', 'postmark', 'mailgun'];
const LAG_MS = 400;

let sandbox: MailSandbox;
const closers: Array<() => Promise<void>> = [];
let nextOrder = 9_100_000;

beforeAll(async () => {
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: LAG_MS } });
  closers.push(() => sandbox.close());
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

function mailApi(provider: MailProviderName, apiKey = 'sandbox-key') {
  return {
    provider,
    baseUrl: sandbox.url,
    apiKey,
    mailgunDomain: TEST_MAILGUN_DOMAIN,
    postmarkMessageStream: 'outbound',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 2,
  };
}

/**
 * The provider's lookup, read as found / not-found by whether an entry is this send's (the evidence rules'
 * entryIsOurs); the timing rules are src/evidence's own test. Failures and unanswerable answers as they come.
 */
function lookupClient(provider: MailProviderName, apiKey = 'sandbox-key', timeoutMs = 1_000) {
  const adapter = createProviderAdapter(mailApi(provider, apiKey));
  const pool = createLookupPool(sandbox.url, { connections: 2, connectTimeoutMs: 1_000, timeoutMs });
  closers.push(() => pool.close());
  const client: LookupClient = createLookupClient({
    adapter: adapter.lookup!,
    baseUrl: sandbox.url,
    dispatcher: pool,
    timeoutMs,
  });
  return {
    async lookUp(query: LookupQuery) {
      const answer = await client.lookUp(query);
      if (answer.kind !== 'entries') return answer;
      const attempt = {
        orderId: query.orderId,
        attempt: 1,
        sendKey: query.sendKey,
        destination: query.destination,
        dispatchedAt: new Date(0),
        sendTimeoutMs: null,
        keyFirstDispatchedAt: new Date(0),
      };
      const ours = answer.entries.find((entry) => entryIsOurs(entry, attempt));
      return ours === undefined
        ? ({ kind: 'not-found' } as const)
        : ({ kind: 'found', providerMessageId: ours.messageId ?? null } as const);
    },
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

async function sendThrough(provider: MailProviderName, orderId: string): Promise<void> {
  const transport = testProviderMailClient(provider, sandbox.url);
  try {
    expect(await transport.send(mail(orderId))).toMatchObject({ outcome: 'accepted' });
  } finally {
    await transport.close();
  }
}

const destinations = new Map(
  VERIFYING.map((provider) => [provider, () => destinationOfMailApi(mailApi(provider))] as const),
);
let currentProvider: MailProviderName = 'generic';
const query = (orderId: string, sendKey = sendKeyOf({ orderId })): LookupQuery => ({
  orderId,
  sendKey,
  destination: destinations.get(currentProvider)!(),
});

describe.each(VERIFYING)('%s lookup', (provider) => {
  beforeAll(() => {
    currentProvider = provider;
  });
  it('finds a sent message by its send key once the indexing lag has passed, and not before', async () => {
    const orderId = String(nextOrder++);
    const client = lookupClient(provider);
    await sendThrough(provider, orderId);
    // Right after the send the provider's log has not caught up: the answer is "not found", which is exactly
    // why the workflow waits for the settle delay before it believes one.
    expect(await client.lookUp(query(orderId))).toEqual({ kind: 'not-found' });
    const [message] = sandbox.messagesFor(orderId);
    const found = await waitFor('the message to be indexed', async () => {
      const answer = await client.lookUp(query(orderId));
      return answer.kind === 'found' ? answer : undefined;
    });
    expect(found).toEqual({ kind: 'found', providerMessageId: message!.id });
  });

  it("does not find it under another send's key (an operator's re-send), nor for an order never sent", async () => {
    const orderId = String(nextOrder++);
    const client = lookupClient(provider);
    await sendThrough(provider, orderId);
    await waitFor('the message to be indexed', async () =>
      (await client.lookUp(query(orderId))).kind === 'found' ? true : undefined,
    );
    expect(await client.lookUp(query(orderId, `order-confirmation/default/${orderId}/1`))).toEqual({
      kind: 'not-found',
    });
    expect(await client.lookUp(query(String(nextOrder++)))).toEqual({ kind: 'not-found' });
  });

  it('forgets a message once the retention has passed', async () => {
    const orderId = String(nextOrder++);
    const client = lookupClient(provider);
    await sendThrough(provider, orderId);
    await waitFor('the message to be indexed', async () =>
      (await client.lookUp(query(orderId))).kind === 'found' ? true : undefined,
    );
    sandbox.configureLookups({ retentionMs: LAG_MS });
    try {
      expect(await client.lookUp(query(orderId))).toEqual({ kind: 'not-found' });
    } finally {
      sandbox.configureLookups({ retentionMs: 7 * 24 * 60 * 60 * 1000 });
    }
  });

  it('a 5xx, a hang past the deadline and a dropped connection are failures to retry, never "not found"', async () => {
    const orderId = String(nextOrder++);
    const client = lookupClient(provider, 'sandbox-key', 500);
    sandbox.queueLookupFault(orderId, { kind: 'status', status: 503 });
    sandbox.queueLookupFault(orderId, { kind: 'hang' });
    sandbox.queueLookupFault(orderId, { kind: 'drop' });
    sandbox.queueLookupFault(orderId, { kind: 'status', status: 429 });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await client.lookUp(query(orderId)));
    expect(answers.map((answer) => answer.kind)).toEqual(['failed', 'failed', 'failed', 'failed']);
    expect(answers[0]).toMatchObject({ reason: 'lookup answered HTTP 503' });
    expect(answers[1]).toMatchObject({ reason: 'lookup failed: no answer within its deadline' });
    const seen = sandbox.lookups().filter((lookup) => lookup.orderId === orderId);
    expect(seen.map((lookup) => lookup.status)).toEqual([503, 'hung', 'dropped', 429]);
    sandbox.releaseHeld();
  });

  it('a key the provider refuses is unanswerable, with a reason that says what to fix', async () => {
    const client = lookupClient(provider, 'not-the-key');
    const answer = await client.lookUp(query(String(nextOrder++)));
    expect(answer.kind).toBe('unanswerable');
    expect(answer).toMatchObject({ reason: expect.stringMatching(/refused/) as unknown });
  });
});

describe('Mailgun Message-Id', () => {
  it('is the same on every attempt of one send, so a lookup finds whichever attempt got through', async () => {
    const orderId = String(nextOrder++);
    await sendThrough('mailgun', orderId);
    await sendThrough('mailgun', orderId);
    const ids = sandbox.messagesFor(orderId).map((message) => message.id);
    expect(ids).toEqual([`<order-confirmation/default/${orderId}/0@${TEST_MAILGUN_DOMAIN}>`, ids[0]]);
  });
});

describe("generic lookup's watermark (the time up to which its list is complete)", () => {
  it('the sandbox answers an honest watermark: a message is listed once the watermark has passed its acceptance', async () => {
    currentProvider = 'generic';
    const orderId = String(nextOrder++);
    const adapter = createProviderAdapter(mailApi('generic'));
    const pool = createLookupPool(sandbox.url, { connections: 1, connectTimeoutMs: 1_000, timeoutMs: 1_000 });
    closers.push(() => pool.close());
    const client = createLookupClient({
      adapter: adapter.lookup!,
      baseUrl: sandbox.url,
      dispatcher: pool,
      timeoutMs: 1_000,
    });
    await sendThrough('generic', orderId);
    const acceptedAt = Date.parse(sandbox.messagesFor(orderId)[0]!.receivedAt);
    const early = await client.lookUp(query(orderId));
    expect(early).toMatchObject({ kind: 'entries', entries: [] });
    const earlyMark = early.kind === 'entries' ? early.watermark : undefined;
    expect(earlyMark!.getTime()).toBeLessThan(acceptedAt);
    const listed = await waitFor('the message to be listed', async () => {
      const answer = await client.lookUp(query(orderId));
      return answer.kind === 'entries' && answer.entries.length > 0 ? answer : undefined;
    });
    expect(listed.watermark!.getTime()).toBeGreaterThanOrEqual(acceptedAt);
  });

  it('the adapter reads the watermark when there is one, and none when it is absent or not a time', () => {
    const lookup = createProviderAdapter(mailApi('generic')).lookup!;
    const read = (body: unknown) =>
      lookup.readAnswer(200, JSON.stringify(body), query('1'), {
        url: `${sandbox.url}/v1/messages?order_id=1`,
      });
    expect(read({ messages: [], watermark: '2026-12-06T05:00:00.000Z' })).toMatchObject({
      kind: 'entries',
      watermark: new Date('2026-12-06T05:00:00.000Z'),
    });
    expect(read({ messages: [] })).not.toHaveProperty('watermark');
    expect(read({ messages: [], watermark: 'soon' })).not.toHaveProperty('watermark');
  });
});
