import { describe, expect, it } from 'vitest';
import { chooseProvider, type EarlierAttempt, type ProviderStanding } from '../../src/shared/providerChoice';
import type { AttemptOutcome } from '../../src/shared/mailOutcome';

const LIST = ['postmark', 'mailgun', 'ses'];
const healthy: ProviderStanding[] = [];
const attempt = (n: number, provider: string | null, outcome: AttemptOutcome): EarlierAttempt => ({
  attempt: n,
  provider,
  outcome,
});
const standing = (
  provider: string,
  operatorMode: ProviderStanding['operatorMode'],
  unhealthy = false,
): ProviderStanding => ({ provider, operatorMode, unhealthy });

describe('chooseProvider: a first attempt', () => {
  it('goes to the first configured provider when all are healthy', () => {
    expect(chooseProvider({ configured: LIST, earlier: [], standings: healthy })).toMatchObject({
      provider: 'postmark',
      reason: 'first',
    });
  });
  it('goes to the only configured provider whatever its health says (the claim does not read it)', () => {
    for (const standings of [[standing('postmark', 'skipped')], [standing('postmark', 'auto', true)]]) {
      expect(chooseProvider({ configured: ['postmark'], earlier: [], standings })).toEqual({
        provider: 'postmark',
        reason: 'first',
        explanation: 'postmark, the only configured provider',
      });
    }
  });
  it('passes over a failing primary, and an operator-skipped one', () => {
    const standings = [standing('postmark', 'auto', true)];
    expect(chooseProvider({ configured: LIST, earlier: [], standings })).toMatchObject({
      provider: 'mailgun',
      reason: 'skipped-unhealthy',
    });
    const skipped = [standing('postmark', 'skipped'), standing('mailgun', 'skipped')];
    expect(chooseProvider({ configured: LIST, earlier: [], standings: skipped })).toMatchObject({
      provider: 'ses',
      reason: 'skipped-by-operator',
    });
  });
  it('goes to a pinned provider, even an unhealthy one', () => {
    const standings = [standing('ses', 'pinned', true)];
    expect(chooseProvider({ configured: LIST, earlier: [], standings })).toMatchObject({
      provider: 'ses',
      reason: 'pinned',
    });
  });
  it('tries the first one no operator skipped when every provider is skipped', () => {
    const standings = [
      standing('postmark', 'skipped'),
      standing('mailgun', 'auto', true),
      standing('ses', 'auto', true),
    ];
    expect(chooseProvider({ configured: LIST, earlier: [], standings })).toMatchObject({
      provider: 'mailgun',
      reason: 'all-unavailable',
    });
  });
  it('names no provider when none is configured by name', () => {
    expect(chooseProvider({ configured: [], earlier: [], standings: healthy }).provider).toBeNull();
  });
});

describe('chooseProvider: after earlier attempts under the same key', () => {
  it('moves on after an attempt known not sent, the failed provider last', () => {
    expect(
      chooseProvider({ configured: LIST, earlier: [attempt(1, 'postmark', 'not_sent')], standings: healthy }),
    ).toMatchObject({ provider: 'mailgun', reason: 'after-not-sent' });
    expect(
      chooseProvider({
        configured: LIST,
        earlier: [attempt(1, 'postmark', 'not_sent'), attempt(2, 'mailgun', 'not_sent')],
        standings: healthy,
      }),
    ).toMatchObject({ provider: 'postmark', reason: 'after-not-sent' });
  });
  it('stays with a single provider after its own not-sent attempt', () => {
    expect(
      chooseProvider({
        configured: ['postmark'],
        earlier: [attempt(1, 'postmark', 'not_sent')],
        standings: healthy,
      }),
    ).toMatchObject({ provider: 'postmark', reason: 'first' });
  });
  for (const outcome of ['unknown', 'rejected', 'legacy'] as const) {
    it(`never moves after an attempt that ended ${outcome}, whatever the health or an operator says`, () => {
      const standings = [standing('postmark', 'skipped', true), standing('mailgun', 'pinned')];
      const choice = chooseProvider({
        configured: LIST,
        earlier: [attempt(1, 'postmark', outcome)],
        standings,
      });
      expect(choice).toMatchObject({ provider: 'postmark', reason: 'bound' });
    });
  }
  it('stays bound after an unknown even when later attempts were not sent', () => {
    const earlier = [
      attempt(1, 'postmark', 'not_sent'),
      attempt(2, 'mailgun', 'unknown'),
      attempt(3, 'mailgun', 'not_sent'),
    ];
    expect(
      chooseProvider({ configured: LIST, earlier, standings: [standing('mailgun', 'auto', true)] }),
    ).toMatchObject({ provider: 'mailgun', reason: 'bound' });
  });
  it('binds an unrecorded provider to the first configured (attempts from before failover)', () => {
    expect(
      chooseProvider({ configured: LIST, earlier: [attempt(1, null, 'unknown')], standings: healthy }),
    ).toMatchObject({ provider: 'postmark', reason: 'bound' });
  });
});

describe('chooseProvider: draining, and providers no longer configured', () => {
  const outcomesThatBind: AttemptOutcome[] = ['unknown', 'rejected', 'accepted'];
  it.each(outcomesThatBind)(
    'an attempt that ended %s at a provider no longer configured leaves no provider to go to',
    (outcome) => {
      const earlier = [attempt(1, 'mailgun', outcome), attempt(2, 'mailgun', 'not_sent')];
      const choice = chooseProvider({ configured: ['postmark', 'ses'], earlier, standings: healthy });
      expect(choice).toMatchObject({ provider: 'mailgun', reason: 'bound-unconfigured' });
    },
  );
  it('an order whose every attempt is known not sent at a removed provider goes to a configured one', () => {
    const earlier = [attempt(1, 'mailgun', 'not_sent')];
    expect(chooseProvider({ configured: ['postmark', 'ses'], earlier, standings: healthy })).toMatchObject({
      provider: 'postmark',
    });
  });
  it('a draining provider keeps the attempts bound to it', () => {
    const earlier = [attempt(1, 'mailgun', 'unknown')];
    expect(
      chooseProvider({ configured: LIST, draining: ['mailgun'], earlier, standings: healthy }),
    ).toMatchObject({ provider: 'mailgun', reason: 'bound' });
  });
  it('a draining provider takes no fresh choice: not first, pinned, after-not-sent or all-unavailable', () => {
    const draining = ['postmark'];
    expect(chooseProvider({ configured: LIST, draining, earlier: [], standings: healthy })).toMatchObject({
      provider: 'mailgun',
      reason: 'first',
    });
    const pinned = [standing('postmark', 'pinned')];
    expect(chooseProvider({ configured: LIST, draining, earlier: [], standings: pinned })).toMatchObject({
      provider: 'mailgun',
    });
    const afterNotSent = [attempt(1, 'mailgun', 'not_sent')];
    expect(
      chooseProvider({ configured: LIST, draining, earlier: afterNotSent, standings: healthy }),
    ).toMatchObject({ provider: 'ses', reason: 'after-not-sent' });
    const allSkipped = [standing('mailgun', 'auto', true), standing('ses', 'auto', true)];
    expect(chooseProvider({ configured: LIST, draining, earlier: [], standings: allSkipped })).toMatchObject({
      provider: 'mailgun',
      reason: 'all-unavailable',
    });
    expect(
      chooseProvider({ configured: ['postmark', 'ses'], draining, earlier: [], standings: healthy }),
    ).toMatchObject({ provider: 'ses', reason: 'first' });
  });
  it('a list that is all draining gives no provider for a new attempt', () => {
    expect(
      chooseProvider({ configured: ['mailgun'], draining: ['mailgun'], earlier: [], standings: healthy }),
    ).toMatchObject({ reason: 'all-draining' });
  });
});
