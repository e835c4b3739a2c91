// `npm run ops -- status` on a run that has claimed nothing yet (its order not visible): the attributes the start
// gave it (`sending`, 1 attempt) must not read as a claimed send beside "no row".
import { expect, it } from 'vitest';
import { formatStatus } from '../../src/ops/formatOpsOutput';
import type { OrderMailStatus } from '../../src/ops/orderMailStatus';

function waitingRun(status: string): OrderMailStatus {
  return {
    orderId: '9999',
    row: null,
    attempts: [],
    acts: [],
    observedResets: [],
    providerEvents: [],
    workflow: {
      runId: 'run-1',
      status,
      startTime: new Date('2026-12-06T13:52:07Z'),
      closeTime: status === 'RUNNING' ? null : new Date('2026-12-06T13:57:12Z'),
      searchAttributes: { OrderMailState: 'sending', OrderMailAttempts: 1 },
    },
    uiUrl: 'http://127.0.0.1:8233/namespaces/default/workflows/9999/run-1/history',
    nextStep: 'Order 9999 is not in orders.',
  };
}

it('a run without a row says its sending/1 is the value the start set, not a claim', () => {
  for (const status of ['RUNNING', 'TERMINATED']) {
    const line = formatStatus(waitingRun(status))
      .split('\n')
      .find((text) => text.startsWith('  in the UI:'));
    expect(line).toBe(
      '  in the UI:  OrderMailState="sending" OrderMailAttempts=1 (set by the start: no attempt has claimed the order yet)',
    );
  }
});
