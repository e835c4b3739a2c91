// --send-outage: a quiet system but for the outage, at the product's settle delay (30 s at most, with the
// reason), and the report's section: witness probes, and how long after the outage each unknown was answered.
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import type { RunOptions } from '../../dev/demo/runOptions';
import { buildSendOutageSection } from '../../dev/demo/sendOutage';

const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;

describe('--send-outage', () => {
  it('drops every send for the given time, from a quiet system at the product’s settle delay', () => {
    const options = parse('--send-outage', '120');
    expect(options.sendOutage).toEqual({ forMs: 120_000 });
    expect(Object.values(options.faults).every((rate) => rate === 0)).toBe(true);
    expect(options).toMatchObject({
      workers: 3,
      killEveryMs: 0,
      refuseEveryMs: 0,
      restartPostgresAt: null,
      restartTemporalAt: null,
    });
    expect(options.verification).toMatchObject({ settleDelayMs: 30_000, lookupFaults: 0, webhookLoss: 0 });
    // Postmark's 5 min and Mailgun's 30 min are capped at 30 s; a flag still sets it.
    expect(parse('--send-outage', '60', '--provider', 'mailgun').verification.settleDelayMs).toBe(30_000);
    expect(parse('--send-outage', '60', '--settle-delay', '5').verification.settleDelayMs).toBe(5_000);
  });

  it.each([
    [['--send-outage', '0'], /more than 0/],
    [['--send-outage', '20', '--failover'], /runs alone/],
    [['--send-outage', '20', '--transport', 'smtp'], /not with --transport smtp/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(...argv)).toThrow(UsageError);
    expect(() => parse(...argv)).toThrow(message);
  });

  it('reports, per provider, the unknowns by answer and the longest wait after the outage', () => {
    const endedAt = 1_000_000;
    const section = buildSendOutageSection({
      window: { startedAt: endedAt - 120_000, endedAt },
      probes: { accepted: 2, unknown: 9 },
      probesAfterOutage: 2,
      unknowns: [
        { orderId: '1', provider: 'generic', answer: 'not found', answeredAt: endedAt + 41_000 },
        { orderId: '2', provider: 'generic', answer: 'found', answeredAt: endedAt - 5_000 },
        { orderId: '3', provider: 'generic', answer: 'policy', answeredAt: endedAt + 300_000 },
      ],
      lastMailAt: endedAt + 44_500,
    });
    expect(section).toEqual({
      outageSeconds: 120,
      probes: { accepted: 2, unknown: 9 },
      probesAfterOutage: 2,
      perProvider: { generic: { found: 1, notFound: 1, byPolicy: 1, maxSecondsAfterOutage: 41 } },
      lastMailSecondsAfterOutage: 44.5,
    });
  });
});
