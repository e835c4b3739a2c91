// The --lying-provider report section (dev/demo/report/lieReport.ts): every lie told is counted by kind, and
// each order it was told about is counted once per way its unknown outcomes were settled, from the audit rows
// alone.
import { describe, expect, it } from 'vitest';
import type { AttemptFact } from '../../dev/demo/report/facts';
import { buildLieSection } from '../../dev/demo/report/lieReport';

function attempt(orderId: string, fields: Partial<AttemptFact>): AttemptFact {
  return {
    orderId,
    attempt: 1,
    state: 'sent',
    outcome: 'accepted',
    unknownPolicy: null,
    dispatched: true,
    verification: null,
    finishedAt: '2026-12-02T00:00:00.000Z',
    ...fields,
  };
}

describe('buildLieSection', () => {
  it('counts lies by kind and says how the orders they were about were settled', () => {
    const section = buildLieSection(
      {
        lag: { told: 3, orderIds: ['1', '1', '2'] },
        'ignore-filter': { told: 1, orderIds: ['3'] },
        paginate: { told: 0, orderIds: [] },
      },
      [
        attempt('1', { verification: 'lookup' }),
        attempt('2', { state: 'failed', outcome: 'not_sent', verification: 'lookup' }),
        attempt('2', { attempt: 2 }),
        attempt('3', { outcome: 'unknown', verification: 'inconclusive', unknownPolicy: 'assume-sent' }),
      ],
    );
    expect(section.told).toBe(4);
    expect(section.byKind).toEqual({
      lag: {
        told: 3,
        orders: 2,
        settled: { 'verified accepted by lookup': 1, 'verified not sent by lookup': 1 },
      },
      'ignore-filter': { told: 1, orders: 1, settled: { 'inconclusive, then assume-sent': 1 } },
      paginate: { told: 0, orders: 0, settled: {} },
    });
  });

  it("an order asked about only as another send's witness is counted as such", () => {
    const section = buildLieSection({ 'wrong-domain': { told: 1, orderIds: ['9'] } }, [attempt('9', {})]);
    expect(section.byKind['wrong-domain']!.settled).toEqual({
      'asked about as a witness, or its own send settled otherwise': 1,
    });
  });
});
