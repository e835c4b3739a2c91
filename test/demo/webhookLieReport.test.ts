// The webhook half of the --lying-provider report (dev/demo/report/webhookLieReport.ts, its invariant in
// scenarioInvariants.ts, the tokens looked up in readFacts.ts) and what the sandbox's lies say they carry
// (packages/sandbox/src/webhookLies.ts): each lie's event ids and replay token, every lie counted by kind
// with how the receiver settled it, and the invariant that no refused webhook wrote a row.
import { describe, expect, it } from 'vitest';
import type { AttemptFact, WebhookFacts } from '../../dev/demo/report/facts';
import { refusedLieTokens } from '../../dev/demo/report/readFacts';
import {
  noRefusedWebhookWroteARow,
  webhookEvidenceInvariants,
} from '../../dev/demo/report/scenarioInvariants';
import { buildWebhookLieSection } from '../../dev/demo/report/webhookLieReport';
import type { ReceivedMessage } from '../../packages/sandbox/src/records';
import {
  emptyLieCounts,
  lieAnswer,
  lieRequests,
  WEBHOOK_LIE_KINDS,
  type WebhookLiePosting,
} from '../../packages/sandbox/src/webhookLies';

const message = (provider: 'mailgun' | 'sendgrid'): ReceivedMessage =>
  ({
    id: provider === 'mailgun' ? '<k.42.1@sandbox.example>' : 'sg-42',
    orderId: '42',
    provider,
    to: 'customer@example.com',
    sendKey: 'dep/42/1',
  }) as unknown as ReceivedMessage;
const signing = { signSendGrid: (p: string, t: number) => `sig-${t}-${p.length}`, mailgunSigningKey: 'k' };

describe('lieRequests says what each posting carries', () => {
  it.each(['mailgun', 'sendgrid'] as const)(
    '%s: the event ids in the body and the replay token',
    (provider) => {
      for (const kind of WEBHOOK_LIE_KINDS) {
        for (const request of lieRequests(kind, message(provider), signing, new Date())) {
          let ids: string[] = [];
          let token: string | null = null;
          try {
            const parsed = JSON.parse(request.body) as unknown;
            const events = provider === 'sendgrid' ? (parsed as { sg_event_id: string }[]) : null;
            if (events !== null) ids = events.map((event) => event.sg_event_id);
            else {
              const body = parsed as { 'event-data'?: { id: string }; signature?: { token: string } };
              ids = body['event-data'] === undefined ? [] : [body['event-data'].id];
              token = body.signature?.token ?? null;
            }
          } catch {
            // oversized and malformed bodies carry no event
          }
          if (provider === 'sendgrid')
            token = request.headers['x-twilio-email-event-webhook-signature'] ?? null;
          expect(request.eventIds, kind).toEqual(ids);
          expect(request.token, kind).toBe(token);
        }
      }
    },
  );

  it("a replay's two postings carry the same token; only the second is the lie", () => {
    const [first, again] = lieRequests('replayed', message('mailgun'), signing, new Date());
    expect(first!.isLie).toBe(false);
    expect(again!.isLie).toBe(true);
    expect(again!.token).toBe(first!.token);
  });
});

describe('lieAnswer', () => {
  it('4xx is refused, 2xx skipped or believed by what was stored, the rest a failure; a cut oversized body is refused', () => {
    expect(lieAnswer('forged', { status: 401, stored: 0 })).toBe('refused');
    expect(lieAnswer('other-order', { status: 200, stored: 0 })).toBe('skipped');
    expect(lieAnswer('other-order', { status: 200, stored: 1 })).toBe('believed');
    expect(lieAnswer('stale', { status: 503, stored: 0 })).toBe('failed');
    expect(lieAnswer('oversized', 'reset')).toBe('refused');
    expect(lieAnswer('malformed', 'reset')).toBe('failed');
  });
});

function posting(fields: Partial<WebhookLiePosting>): WebhookLiePosting {
  return {
    kind: 'forged',
    orderId: '1',
    isLie: true,
    eventIds: [],
    token: null,
    answer: 'refused',
    ...fields,
  };
}

function facts(
  fields: Omit<Partial<WebhookFacts>, 'rows'> & { rows?: Partial<WebhookFacts['rows']> } = {},
): WebhookFacts {
  const lies = emptyLieCounts();
  lies.forged = { posted: 1, refused: 1, skipped: 0, believed: 0, kept: 0, failed: 0 };
  lies.replayed = { posted: 1, refused: 1, skipped: 0, believed: 0, kept: 0, failed: 0 };
  lies['other-order'] = { posted: 1, refused: 0, skipped: 1, believed: 0, kept: 0, failed: 0 };
  return {
    lies,
    liePostings: [
      posting({ kind: 'forged', orderId: '1', eventIds: ['lie-1'], token: 't-forged' }),
      posting({
        kind: 'replayed',
        orderId: '2',
        isLie: false,
        eventIds: ['lie-2'],
        token: 't-r',
        answer: 'believed',
      }),
      posting({ kind: 'replayed', orderId: '2', eventIds: ['lie-2'], token: 't-r', answer: 'refused' }),
      posting({ kind: 'other-order', orderId: '3', eventIds: ['lie-3'], token: 't-o', answer: 'skipped' }),
    ],
    acceptedGenuineEventIds: ['mg-1', 'mg-2'],
    acceptedGenuinePostings: 3,
    ...fields,
    rows: {
      storedEventIds: ['mg-1', 'mg-2', 'lie-2'],
      deliveryRows: 5,
      refusedTokensStored: [],
      ...fields.rows,
    },
  };
}

describe('noRefusedWebhookWroteARow', () => {
  it("holds when the tables hold exactly the events taken, a replay's first posting included", () => {
    expect(noRefusedWebhookWroteARow(facts())).toMatchObject({ holds: true, violationCount: 0 });
  });

  it("fails on a lie's event stored, an event from nowhere, an event taken but lost, a refused token kept", () => {
    const broken = noRefusedWebhookWroteARow(
      facts({
        rows: {
          storedEventIds: ['mg-1', 'lie-2', 'lie-3', 'lie-1', 'x-9'],
          refusedTokensStored: ['t-forged'],
        },
      }),
    );
    expect(broken.holds).toBe(false);
    expect(broken.violations).toEqual([
      'event lie-3 of a lie stored',
      'event lie-1 of a lie stored',
      'event x-9 stored, but no posting of it was taken',
      'event mg-2 taken (2xx) but not stored',
      "refused posting's token t-forged kept",
    ]);
  });

  it('fails when more replay tokens are kept than postings were taken', () => {
    const broken = noRefusedWebhookWroteARow(facts({ rows: { deliveryRows: 6 } }));
    expect(broken.violations).toEqual(['6 replay tokens kept for 5 postings taken']);
  });
});

describe('refusedLieTokens', () => {
  it("lists the tokens of postings not taken, less a replay's, whose first posting was taken", () => {
    expect(refusedLieTokens(facts().liePostings)).toEqual(['t-forged']);
  });
});

describe('buildWebhookLieSection', () => {
  it("counts every kind with the receiver's settlement and its orders' settlements", () => {
    const attempts: AttemptFact[] = [
      {
        orderId: '3',
        attempt: 1,
        state: 'sent',
        outcome: 'accepted',
        unknownPolicy: null,
        dispatched: true,
        verification: 'lookup',
        finishedAt: '2026-12-02T00:00:00.000Z',
      },
    ];
    const section = buildWebhookLieSection(facts(), attempts);
    expect(section.told).toBe(3);
    expect(section.byKind.forged).toEqual({
      told: 1,
      receiver: { 'refused by the receiver (4xx), nothing written': 1 },
      orders: 1,
      settled: { 'no unknown outcome (nothing to verify)': 1 },
    });
    expect(section.byKind['other-order']).toEqual({
      told: 1,
      receiver: { 'taken (2xx), not ours: nothing stored': 1 },
      orders: 1,
      settled: { 'verified accepted by lookup': 1 },
    });
    expect(section.byKind.stale).toEqual({ told: 0, receiver: {}, orders: 0, settled: {} });
    expect(section.rows).toEqual({ eventRows: 3, acceptedEvents: 3, deliveryRows: 5, acceptedPostings: 5 });
  });
});

describe('SNS lies over SES', () => {
  const sesAttempt = (orderId: string, fields: Partial<AttemptFact> = {}): AttemptFact => ({
    orderId,
    attempt: 1,
    state: 'sent',
    outcome: 'accepted',
    unknownPolicy: null,
    dispatched: true,
    verification: 'webhook',
    finishedAt: '2026-12-06T00:00:00.000Z',
    ...fields,
  });
  const sesFacts = (liePostings: WebhookLiePosting[]): WebhookFacts => {
    const lies = emptyLieCounts();
    for (const p of liePostings) {
      lies[p.kind].posted += 1;
      lies[p.kind][p.answer] += 1;
    }
    return {
      lies,
      liePostings,
      acceptedGenuineEventIds: ['sns-1'],
      acceptedGenuinePostings: 1,
      genuine: { events: 1, refused: 0, neverTaken: 0, retries: 0, latestTakenMs: 0 },
      rows: {
        storedEventIds: [
          'sns-1',
          ...liePostings.filter((p) => p.answer === 'kept').flatMap((p) => p.eventIds),
        ],
        deliveryRows: 1 + liePostings.filter((p) => p.answer === 'kept').length,
        refusedTokensStored: [],
      },
    };
  };

  it('a lie from elsewhere is kept, not believed; it is believed when it settles a send SES never took', () => {
    expect(lieAnswer('other-account', { status: 200, stored: 1 })).toBe('kept');
    expect(lieAnswer('forged-host', { status: 200, stored: 1 })).toBe('believed');
    const kept = posting({
      kind: 'other-account',
      orderId: '7',
      eventIds: ['lie-7'],
      token: 'lie-7',
      answer: 'kept',
      sendKey: 'dep/7/0',
      aboutNotTaken: true,
    });
    const facts = sesFacts([kept]);
    // Order 7's only attempt settled as accepted by a webhook, and SES took no message of its key: the lie did it.
    const believed = buildWebhookLieSection(facts, [sesAttempt('7')], []);
    expect(believed.believed).toEqual({ byReceiver: 0, byAnAttempt: 1, orders: ['7'] });
    expect(webhookEvidenceInvariants(facts, [sesAttempt('7')], [])[0]).toMatchObject({
      name: 'no-lie-believed',
      holds: false,
    });
    // The same with a message of that key at SES: a genuine event could have settled it.
    const genuine = buildWebhookLieSection(
      facts,
      [sesAttempt('7')],
      [{ orderId: '7', id: 'm-7', receivedAt: '2026-12-06T00:00:00.000Z', sendKey: 'dep/7/0' }],
    );
    expect(genuine.believed.byAnAttempt).toBe(0);
    // Settled by the policy instead: the lie settled nothing.
    const policy = sesAttempt('7', { outcome: 'unknown', verification: 'inconclusive' });
    expect(buildWebhookLieSection(facts, [policy], []).believed.byAnAttempt).toBe(0);
    // Kept events are stored by design: no refused webhook wrote a row.
    expect(noRefusedWebhookWroteARow(facts).holds).toBe(true);
    // The SNS kinds show only where they were told; the others always.
    expect(Object.keys(genuine.byKind)).toEqual([...WEBHOOK_LIE_KINDS, 'other-account']);
  });

  it('a forged event stored as ours is a lie believed; a genuine event refused or never taken fails its invariant', () => {
    const facts = sesFacts([
      posting({ kind: 'forged-host', orderId: '8', eventIds: ['lie-8'], token: 'lie-8', answer: 'believed' }),
    ]);
    facts.genuine = { events: 3, refused: 1, neverTaken: 1, retries: 4, latestTakenMs: 400_000 };
    const [lies, genuine] = webhookEvidenceInvariants(facts, [], []);
    expect(lies).toMatchObject({ holds: false, violations: ['1 lie postings stored as ours'] });
    expect(genuine).toMatchObject({
      name: 'no-genuine-event-refused',
      holds: false,
      violations: ['1 genuine events refused', '1 genuine events never taken'],
    });
  });
});

describe('an SES lie from elsewhere whose answer was lost', () => {
  it('may have been kept: its stored event and token break no invariant, and it counts if it settled a send', () => {
    const lost = posting({
      kind: 'other-configuration-set',
      orderId: '9',
      eventIds: ['lie-9'],
      token: 'lie-9',
      answer: 'failed',
      sendKey: 'dep/9/0',
      aboutNotTaken: true,
    });
    const facts: WebhookFacts = {
      lies: emptyLieCounts(),
      liePostings: [lost],
      acceptedGenuineEventIds: [],
      acceptedGenuinePostings: 0,
      rows: { storedEventIds: ['lie-9'], deliveryRows: 1, refusedTokensStored: [] },
    };
    expect(refusedLieTokens([lost])).toEqual([]);
    expect(noRefusedWebhookWroteARow(facts)).toMatchObject({ holds: true });
    // Or not stored at all: also right.
    const notStored = { ...facts, rows: { storedEventIds: [], deliveryRows: 0, refusedTokensStored: [] } };
    expect(noRefusedWebhookWroteARow(notStored)).toMatchObject({ holds: true });
    const settled: AttemptFact = {
      orderId: '9',
      attempt: 1,
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      dispatched: true,
      verification: 'webhook',
      finishedAt: '2026-12-06T00:00:00.000Z',
    };
    expect(buildWebhookLieSection(facts, [settled], []).believed.orders).toEqual(['9']);
    // A forged lie whose answer was lost is not excused: the receiver must never store one.
    const forged = { ...lost, kind: 'forged-host' as const };
    expect(noRefusedWebhookWroteARow({ ...facts, liePostings: [forged] }).holds).toBe(false);
  });
});
