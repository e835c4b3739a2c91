// The webhook half of the --lying-provider report (dev/demo/report/webhookLieReport.ts, its invariant in
// scenarioInvariants.ts, the tokens looked up in readFacts.ts) and what the sandbox's lies say they carry
// (dev/sandbox/webhookLies.ts): each lie's event ids and replay token, every lie counted by kind with how the
// receiver settled it, and the invariant that no refused webhook wrote a row.
import { describe, expect, it } from 'vitest';
import type { AttemptFact, WebhookFacts } from '../../dev/demo/report/facts';
import { refusedLieTokens } from '../../dev/demo/report/readFacts';
import { noRefusedWebhookWroteARow } from '../../dev/demo/report/scenarioInvariants';
import { buildWebhookLieSection } from '../../dev/demo/report/webhookLieReport';
import type { ReceivedMessage } from '../../dev/sandbox/records';
import {
  emptyLieCounts,
  lieAnswer,
  lieRequests,
  WEBHOOK_LIE_KINDS,
  type WebhookLiePosting,
} from '../../dev/sandbox/webhookLies';

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
