// The evidence rules as a table, without a server: what a provider's answer about an attempt counts as
// (src/evidence/evidenceRules.ts). The workflow, takeover and sweep tests show the same rules end to end.
import { describe, expect, it } from 'vitest';
import { credentialFingerprint, type SendDestination } from '../../src/evidence/destination';
import {
  judgeLookup,
  judgeWebhookEvents,
  notFoundCountsFrom,
  whyLookupCannotDecide,
  type DispatchedAttempt,
  type EvidenceTiming,
} from '../../src/evidence/evidenceRules';
import type { LookupAnswer } from '../../src/evidence/lookupAnswer';
import { mailgunMessageId } from '../../src/evidence/messageIdentity';

const KEY = 'order-confirmation/production/700/0';
const MAILGUN: SendDestination = {
  provider: 'mailgun',
  origin: 'https://api.mailgun.net',
  scope: 'mg.example.com',
  credentialFingerprint: credentialFingerprint('key-1'),
};
const GENERIC: SendDestination = {
  provider: 'generic',
  origin: 'https://mail.example.com',
  scope: null,
  credentialFingerprint: credentialFingerprint('key-1'),
};
const DISPATCHED = new Date('2026-12-02T10:00:00Z');
const attemptTo = (destination: SendDestination | null, changes: Partial<DispatchedAttempt> = {}) => ({
  orderId: '700',
  attempt: 1,
  sendKey: KEY,
  destination,
  dispatchedAt: DISPATCHED,
  sendTimeoutMs: 60_000,
  keyFirstDispatchedAt: DISPATCHED,
  ...changes,
});
const TIMING: EvidenceTiming = {
  settleDelayMs: 30_000,
  retentionMs: 86_400_000,
  fallbackSendTimeoutMs: 10_000,
};
const LATE = new Date(DISPATCHED.getTime() + 60_000 + 30_000);
const entries = (
  list: Extract<LookupAnswer, { kind: 'entries' }>['entries'],
  filteredBy: 'send' | 'order' = 'send',
  complete = true,
): Extract<LookupAnswer, { kind: 'entries' }> => ({ kind: 'entries', filteredBy, complete, entries: list });

describe('from where the attempt went', () => {
  it('SES: sent from another account, it cannot be asked about here; recorded before accounts were, it can', () => {
    const ses: SendDestination = {
      provider: 'ses',
      origin: 'https://email.eu-west-1.amazonaws.com',
      scope: 'eu-west-1/order-mail-events',
      credentialFingerprint: credentialFingerprint('AKIAEXAMPLE'),
      account: '111122223333',
    };
    expect(whyLookupCannotDecide(attemptTo({ ...ses, account: '444455556666' }), ses)).toMatch(
      /account 444455556666, asking 111122223333/,
    );
    expect(whyLookupCannotDecide(attemptTo({ ...ses, account: null }), ses)).toBeNull();
  });

  it.each([
    ['another provider', { ...GENERIC, provider: 'postmark' }, /provider generic, asking postmark/],
    ['another origin (region)', { ...GENERIC, origin: 'https://eu.mail.example.com' }, /origin/],
    [
      'another API key',
      { ...GENERIC, credentialFingerprint: credentialFingerprint('key-2') },
      /another API key/,
    ],
  ])('%s: an empty answer is inconclusive, never not found', (_, asking, reason) => {
    const verdict = judgeLookup({
      attempt: attemptTo(GENERIC),
      asking,
      answer: entries([], 'order'),
      now: LATE,
      timing: TIMING,
    });
    expect(verdict).toMatchObject({ kind: 'inconclusive', reason: expect.stringMatching(reason) as unknown });
  });

  it('another Mailgun domain, and a destination never recorded: inconclusive', () => {
    expect(
      judgeLookup({
        attempt: attemptTo(MAILGUN),
        asking: { ...MAILGUN, scope: 'mg2.example.com' },
        answer: entries([]),
        now: LATE,
        timing: TIMING,
      }),
    ).toMatchObject({
      kind: 'inconclusive',
      reason: expect.stringMatching(/Mailgun domain mg.example.com/) as unknown,
    });
    expect(
      judgeLookup({
        attempt: attemptTo(null),
        asking: MAILGUN,
        answer: entries([]),
        now: LATE,
        timing: TIMING,
      }),
    ).toMatchObject({ kind: 'inconclusive', reason: expect.stringMatching(/not recorded/) as unknown });
  });
});

describe('ours, compared exactly', () => {
  it('Mailgun: an item counts only with our Message-Id; another message under the filter makes it inconclusive', () => {
    const ours = { messageId: mailgunMessageId(KEY, 'mg.example.com') };
    const judge = (list: Parameters<typeof entries>[0]) =>
      judgeLookup({
        attempt: attemptTo(MAILGUN),
        asking: MAILGUN,
        answer: entries(list),
        now: LATE,
        timing: TIMING,
      });
    expect(judge([ours])).toEqual({ kind: 'found', via: 'lookup', providerMessageId: ours.messageId });
    expect(judge([{ messageId: `<${ours.messageId}>` }])).toMatchObject({ kind: 'found' });
    // The filter was ignored (or another message came back): it is not ours, and nothing can be concluded.
    expect(judge([{ messageId: 'other@mg.example.com', sendKey: KEY }])).toMatchObject({
      kind: 'inconclusive',
    });
    expect(judge([{ sendKey: KEY }])).toMatchObject({ kind: 'inconclusive' });
  });

  it("another deployment's key or another send's key is not ours; an entry without metadata is not ours", () => {
    const judge = (list: Parameters<typeof entries>[0]) =>
      judgeLookup({
        attempt: attemptTo(GENERIC),
        asking: GENERIC,
        answer: entries(list, 'send'),
        now: LATE,
        timing: TIMING,
      });
    expect(judge([{ sendKey: 'order-confirmation/staging/700/0', messageId: 'm1' }])).toMatchObject({
      kind: 'inconclusive',
    });
    expect(judge([{ messageId: 'm1' }])).toMatchObject({ kind: 'inconclusive' });
    expect(judge([{ sendKey: KEY, messageId: 'm1' }])).toEqual({
      kind: 'found',
      via: 'lookup',
      providerMessageId: 'm1',
    });
  });

  it("an order filter: this order's other sends are no evidence either way; another order's entries mean the filter was ignored", () => {
    const judge = (list: Parameters<typeof entries>[0]) =>
      judgeLookup({
        attempt: attemptTo(GENERIC),
        asking: GENERIC,
        answer: entries(list, 'order'),
        now: LATE,
        timing: TIMING,
      });
    expect(judge([{ orderId: '700', sendKey: 'order-confirmation/production/700/1' }])).toMatchObject({
      kind: 'not_found',
    });
    expect(judge([{ orderId: '701', sendKey: 'order-confirmation/production/701/0' }])).toMatchObject({
      kind: 'inconclusive',
      reason: expect.stringMatching(/filter/) as unknown,
    });
  });

  it('an incomplete answer cannot say not found', () => {
    const verdict = judgeLookup({
      attempt: attemptTo(GENERIC),
      asking: GENERIC,
      answer: { ...entries([], 'order', false), incompleteReason: 'TotalCount 12, 10 read' },
      now: LATE,
      timing: TIMING,
    });
    expect(verdict).toMatchObject({
      kind: 'inconclusive',
      reason: expect.stringMatching(/TotalCount 12/) as unknown,
    });
  });
});

describe('after the request could have ended', () => {
  const empty = entries([], 'order');
  it('counts from dispatch + the attempt’s own send timeout + the settle delay when nobody saw the request end', () => {
    expect(notFoundCountsFrom(attemptTo(GENERIC), TIMING)).toEqual(new Date(DISPATCHED.getTime() + 90_000));
    const early = new Date(DISPATCHED.getTime() + 89_999);
    expect(
      judgeLookup({
        attempt: attemptTo(GENERIC),
        asking: GENERIC,
        answer: empty,
        now: early,
        timing: TIMING,
      }),
    ).toMatchObject({
      kind: 'wait_until',
      until: new Date(DISPATCHED.getTime() + 90_000),
    });
    expect(
      judgeLookup({ attempt: attemptTo(GENERIC), asking: GENERIC, answer: empty, now: LATE, timing: TIMING }),
    ).toEqual({
      kind: 'not_found',
      sinceDispatchMs: 90_000,
    });
  });

  it('counts from the request’s seen end where its own execution saw it; the asking worker’s timeout only when none was recorded', () => {
    expect(notFoundCountsFrom(attemptTo(GENERIC), { ...TIMING, requestEndedWithinMs: 2_000 })).toEqual(
      new Date(DISPATCHED.getTime() + 32_000),
    );
    expect(notFoundCountsFrom(attemptTo(GENERIC, { sendTimeoutMs: null }), TIMING)).toEqual(
      new Date(DISPATCHED.getTime() + 40_000),
    );
  });

  it('past the retention since the key’s first request: inconclusive', () => {
    const attempt = attemptTo(GENERIC, { keyFirstDispatchedAt: new Date(DISPATCHED.getTime() - 86_400_000) });
    expect(judgeLookup({ attempt, asking: GENERIC, answer: empty, now: LATE, timing: TIMING })).toMatchObject(
      {
        kind: 'inconclusive',
        reason: expect.stringMatching(/retention/) as unknown,
      },
    );
  });
});

describe('webhook events', () => {
  const event = (
    changes: Partial<{ sendKey: string | null; providerMessageId: string | null; occurredAt: Date }>,
  ) => ({
    sendKey: KEY,
    providerMessageId: null,
    occurredAt: DISPATCHED,
    eventType: 'accepted',
    ...changes,
  });
  const sendgrid: SendDestination = {
    provider: 'sendgrid',
    origin: 'https://api.sendgrid.com',
    scope: null,
    credentialFingerprint: null,
  };

  it('a provider without a lookup: an event of this send at or after the dispatch settles it', () => {
    expect(
      judgeWebhookEvents({
        attempt: attemptTo(sendgrid),
        events: [event({ providerMessageId: 'sg-1' })],
        providerHasLookup: false,
      }),
    ).toMatchObject({ kind: 'found' });
  });

  it('dated before the dispatch (1970, a replayed old event) or of another key: not this attempt’s', () => {
    expect(
      judgeWebhookEvents({
        attempt: attemptTo(sendgrid),
        events: [event({ occurredAt: new Date(0) })],
        providerHasLookup: false,
      }),
    ).toEqual({ kind: 'none', ignored: 1, elsewhere: 0 });
    expect(
      judgeWebhookEvents({
        attempt: attemptTo(sendgrid),
        events: [event({ sendKey: 'order-confirmation/production/777/0' })],
        providerHasLookup: false,
      }),
    ).toEqual({ kind: 'none', ignored: 1, elsewhere: 0 });
  });

  describe('SES: only from the attempt’s configuration set and sending account', () => {
    const ses: SendDestination = {
      provider: 'ses',
      origin: 'https://email.eu-west-1.amazonaws.com',
      scope: 'eu-west-1/order-mail-events',
      credentialFingerprint: credentialFingerprint('AKIAEXAMPLE'),
      account: '111122223333',
    };
    const sesEvent = (sendingAccount: string | null, configurationSet: string | null) => ({
      ...event({ providerMessageId: 'ses-1' }),
      sendingAccount,
      configurationSet,
    });
    const judge = (
      destination: SendDestination,
      ev: ReturnType<typeof sesEvent>,
      asking: SendDestination | null = ses,
    ) =>
      judgeWebhookEvents({ attempt: attemptTo(destination), events: [ev], providerHasLookup: false, asking });

    it.each([
      ['another account', sesEvent('444455556666', 'order-mail-events')],
      [
        'another configuration set (a staging deployment on the same topic)',
        sesEvent('111122223333', 'staging'),
      ],
      ['neither recorded (an event stored before migration 0052)', sesEvent(null, null)],
    ])('%s: not this attempt’s, counted as from elsewhere', (_, ev) => {
      expect(judge(ses, ev)).toEqual({ kind: 'none', ignored: 1, elsewhere: 1 });
    });

    it('the same event from its own set and account settles it', () => {
      expect(judge(ses, sesEvent('111122223333', 'order-mail-events'))).toMatchObject({ kind: 'found' });
    });

    it('dispatched before the account was recorded: judged by its set and the configured account', () => {
      const before = { ...ses, account: null };
      expect(judge(before, sesEvent('111122223333', 'order-mail-events'))).toMatchObject({ kind: 'found' });
      expect(judge(before, sesEvent('444455556666', 'order-mail-events'))).toMatchObject({
        kind: 'none',
        elsewhere: 1,
      });
      // No account anywhere to judge by: nothing counts.
      expect(judge(before, sesEvent('111122223333', 'order-mail-events'), null)).toMatchObject({
        kind: 'none',
        elsewhere: 1,
      });
    });
  });

  it('Mailgun: only with our Message-Id, and even then it only asks the lookup, never settles alone', () => {
    const ours = mailgunMessageId(KEY, 'mg.example.com');
    expect(
      judgeWebhookEvents({
        attempt: attemptTo(MAILGUN),
        events: [event({ providerMessageId: 'forged@mg.example.com' })],
        providerHasLookup: true,
      }),
    ).toEqual({ kind: 'none', ignored: 1, elsewhere: 0 });
    expect(
      judgeWebhookEvents({
        attempt: attemptTo(MAILGUN),
        events: [event({ providerMessageId: `<${ours}>` })],
        providerHasLookup: true,
      }),
    ).toMatchObject({ kind: 'ask-lookup' });
  });
});
