// --provider-change: the report's invariants over a drain and a key rotation, each story told in a few lines.
import { describe, expect, it } from 'vitest';
import type { ProviderChangeFacts } from '../../dev/demo/providerChange';
import {
  buildProviderChangeSection,
  providerChangeInvariants,
  type ProviderChangeInput,
} from '../../dev/demo/report/providerChangeReport';

const OLD = 'sha256:00000000000000aa';
const NEW = 'sha256:00000000000000bb';

function change(overrides: Partial<ProviderChangeFacts> = {}): ProviderChangeFacts {
  return {
    drained: 'postmark',
    rotated: 'mailgun',
    oldKeyFingerprint: OLD,
    newKeyFingerprint: NEW,
    steps: [
      { step: 'drain-rolled', atMs: 25_000 },
      { step: 'rotation-drain-rolled', atMs: 60_000 },
      { step: 'old-key-unbound', atMs: 90_000 },
      { step: 'new-key-added', atMs: 90_000 },
      { step: 'new-key-rolled', atMs: 100_000 },
      { step: 'old-key-revoked', atMs: 100_000 },
      { step: 'rotation-done', atMs: 110_000 },
    ],
    rolledWorkers: 12,
    stoppedBy: null,
    revokedAtMs: 100_000,
    ...overrides,
  };
}

/** Four orders: 1 at postmark, 2 under mailgun's old key, 3 under its new key, 4 at postmark after a retry. */
function story(overrides: Partial<ProviderChangeInput> = {}): ProviderChangeInput {
  return {
    change: change(),
    orderIds: ['1', '2', '3', '4'],
    rows: [
      // Postmark's key may be the same string as mailgun's old one: only mailgun's rows count as its old key's.
      { orderId: '1', state: 'sent', dispatchProvider: 'postmark', dispatchCredentialFingerprint: OLD },
      { orderId: '2', state: 'sent', dispatchProvider: 'mailgun', dispatchCredentialFingerprint: OLD },
      { orderId: '3', state: 'sent', dispatchProvider: 'mailgun', dispatchCredentialFingerprint: NEW },
      { orderId: '4', state: 'sent', dispatchProvider: 'postmark', dispatchCredentialFingerprint: OLD },
    ],
    attempts: [
      { orderId: '1', provider: 'postmark' },
      { orderId: '2', provider: 'mailgun' },
      { orderId: '3', provider: 'mailgun' },
      { orderId: '4', provider: 'postmark' },
      { orderId: '4', provider: 'postmark' },
    ],
    messages: [{ orderId: '1' }, { orderId: '2' }, { orderId: '3' }, { orderId: '4' }],
    refusedForKey: 0,
    opsCommand: 'npm run ops -- list --state failed',
    opsListing: [],
    opsFailure: null,
    ...overrides,
  };
}

function judge(input: ProviderChangeInput): Record<string, string[]> {
  const section = buildProviderChangeSection(input);
  const results = providerChangeInvariants(section, input.orderIds);
  return Object.fromEntries(results.map((result) => [result.name, result.violations]));
}

describe('the --provider-change invariants', () => {
  it('hold when every customer has one mail and the ops command lists no one', () => {
    const judged = judge(story());
    expect(Object.values(judged).flat()).toEqual([]);
    expect(buildProviderChangeSection(story())).toMatchObject({
      verifiableByDraining: 3,
      sentUnderNewKey: 1,
    });
  });

  it('catch a second mail', () => {
    expect(judge(story({ messages: [...story().messages, { orderId: '3' }] }))).toMatchObject({
      'provider-change-no-two-mails': ['3'],
    });
  });

  it("catch a customer without a mail among the drained provider's and the old key's orders", () => {
    const judged = judge(
      story({ messages: [{ orderId: '3' }], opsListing: [{ orderId: '1', state: 'failed', reason: 'x' }] }),
    );
    expect(judged['draining-verifiable-all-mailed']).toEqual(['1', '2', '4']);
  });

  it('catch a customer without a mail that the ops command does not list, or lists without a reason', () => {
    const noMailFor3 = story().messages.filter((message) => message.orderId !== '3');
    expect(judge(story({ messages: noMailFor3 }))['ops-lists-the-rest']).toEqual(['3: no mail, not listed']);
    expect(
      judge(story({ messages: noMailFor3, opsListing: [{ orderId: '3', state: 'failed', reason: ' ' }] }))[
        'ops-lists-the-rest'
      ],
    ).toEqual(['3: listed without a reason']);
    expect(
      judge(
        story({ messages: noMailFor3, opsListing: [{ orderId: '3', state: 'failed', reason: 'HTTP 422' }] }),
      )['ops-lists-the-rest'],
    ).toEqual([]);
  });

  it('catch a listing of a customer who has a mail, and a command that did not run', () => {
    expect(
      judge(story({ opsListing: [{ orderId: '3', state: 'failed', reason: 'HTTP 422' }] }))[
        'ops-lists-the-rest'
      ],
    ).toEqual(['3: listed, but its customer has a mail']);
    expect(judge(story({ opsListing: null, opsFailure: 'exit 1' }))['ops-lists-the-rest']).toHaveLength(1);
  });

  it("count a row as the old key's only when it went to the rotated provider", () => {
    const rows = story().rows.map((row) =>
      row.orderId === '3'
        ? { ...row, dispatchProvider: 'postmark', dispatchCredentialFingerprint: OLD }
        : row,
    );
    expect(
      buildProviderChangeSection(story({ rows, attempts: story().attempts.slice(0, 3) }))
        .verifiableByDraining,
    ).toBe(2);
  });

  it('ignore listed orders of other runs', () => {
    const listing = [{ orderId: '99', state: 'failed', reason: 'HTTP 422' }];
    expect(judge(story({ opsListing: listing }))['ops-lists-the-rest']).toEqual([]);
  });

  it('catch the old key used after its revocation, and a change that stopped or never ended', () => {
    expect(judge(story({ refusedForKey: 2 }))['revoked-key-unused']).toHaveLength(1);
    expect(judge(story({ change: change({ stoppedBy: '3 still bound' }) }))['provider-change-done']).toEqual([
      'stopped: 3 still bound',
    ]);
    expect(
      judge(story({ change: change({ steps: change().steps.slice(0, 3) }) }))['provider-change-done'],
    ).toEqual(['the rotation did not reach its end']);
  });
});
