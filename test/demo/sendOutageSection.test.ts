// --send-outage's report section: how long after the outage each unknown was answered, per provider and answer.
import { describe, expect, it } from 'vitest';
import { buildSendOutageSection } from '../../dev/demo/sendOutage';

describe('the --send-outage report section', () => {
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
