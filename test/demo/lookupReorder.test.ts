// --lookup-reorder: the report's invariant tells a reordering inside what the provider promises from one past it
// (docs/providers.md, "What a witness assumes, per provider").
import { describe, expect, it } from 'vitest';
import type { LookupReorderFacts } from '../../dev/demo/report/facts';
import { lookupReorderInvariant } from '../../dev/demo/report/scenarioInvariants';

describe('lookup-reorder-within-contract', () => {
  const facts = (changes: Partial<LookupReorderFacts>): LookupReorderFacts => ({
    provider: 'generic',
    holdMs: 60_000,
    share: 0.2,
    watermark: 'honest',
    settleDelayMs: 30_000,
    sendTimeoutMs: 8_000,
    lookupsHiding: 10,
    lookupsOutOfOrder: 10,
    watermarkPastHidden: 0,
    ...changes,
  });

  it('holds for an honest generic watermark, however long the hold, and for Mailgun up to its threshold', () => {
    expect(lookupReorderInvariant(facts({})).holds).toBe(true);
    expect(lookupReorderInvariant(facts({ provider: 'mailgun', holdMs: 30_000 })).holds).toBe(true);
    expect(lookupReorderInvariant(facts({ provider: 'postmark', holdMs: 5_000 })).holds).toBe(true);
  });

  it('fails for a watermark past a hidden send, Mailgun past its threshold, or an in-order read held too long', () => {
    expect(lookupReorderInvariant(facts({ watermark: 'lying', watermarkPastHidden: 3 })).violations).toEqual([
      '3 answers gave a watermark past a message they hid',
    ]);
    expect(lookupReorderInvariant(facts({ provider: 'mailgun', holdMs: 31_000 })).holds).toBe(false);
    expect(lookupReorderInvariant(facts({ provider: 'postmark', holdMs: 8_000 })).holds).toBe(false);
    expect(lookupReorderInvariant(facts({ watermark: 'absent', holdMs: 9_000 })).holds).toBe(false);
  });
});
