// The sandbox's reordering lookup (src/lookupReorder.ts): a send it took without answering
// shows only holdMs after it was taken, a later one at once, and the generic watermark is honest (stops
// before the hidden send), absent, or lying (past it), as the plan says. Real HTTP over loopback.
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../src/mailSandbox';
import type { ReorderWatermark } from '../src/lookupReorder';

const HOLD_MS = 1_500;
let sandbox: MailSandbox;

beforeAll(async () => {
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 0 } });
});

afterAll(async () => {
  await sandbox?.close();
});

beforeEach(() => {
  sandbox.reset();
  sandbox.configureLookups({ indexingLagMs: 0 });
});

const headers = { authorization: 'Bearer sandbox-key', 'content-type': 'application/json' };

async function send(orderId: string): Promise<void> {
  const body = JSON.stringify({
    from: 'shop@example.com',
    to: 'customer@example.com',
    reply_to: null,
    subject: 'Thanks',
    text: 'Confirmed.',
    metadata: { order_id: orderId, send_key: `order-confirmation/default/${orderId}/0` },
  });
  // A dropped answer is the point for the held one; the message is recorded either way.
  await fetch(`${sandbox.url}/v1/messages`, { method: 'POST', headers, body }).then(
    (response) => response.body?.cancel(),
    () => undefined,
  );
}

async function lookup(orderId: string): Promise<{ messages: { order_id: string }[]; watermark?: string }> {
  const response = await fetch(`${sandbox.url}/v1/messages?order_id=${orderId}`, { headers });
  return (await response.json()) as { messages: { order_id: string }[]; watermark?: string };
}

it.each<[ReorderWatermark, (watermark: string | undefined, heldAt: number) => boolean]>([
  ['honest', (watermark, heldAt) => watermark !== undefined && Date.parse(watermark) < heldAt],
  ['absent', (watermark) => watermark === undefined],
  ['lying', (watermark, heldAt) => watermark !== undefined && Date.parse(watermark) >= heldAt],
])(
  'a later send shows before the earlier one it took without answering; the watermark is %s',
  async (mode, fits) => {
    sandbox.setLookupReorder({ holdMs: HOLD_MS, share: 0, watermark: mode });
    sandbox.queueFault('101', { kind: 'accept-then-drop' });
    await send('101');
    await send('102');
    const heldAt = Date.parse(sandbox.messagesFor('101')[0]!.receivedAt);

    const later = await lookup('102');
    expect(later.messages.map((message) => message.order_id)).toEqual(['102']);
    expect(fits(later.watermark, heldAt)).toBe(true);
    expect((await lookup('101')).messages).toEqual([]);
    const records = sandbox.lookups();
    expect(records[0]!.reorder).toEqual({
      hidden: 1,
      outOfOrder: true,
      watermarkPastHidden: mode === 'lying',
    });

    await new Promise((resolve) => setTimeout(resolve, HOLD_MS + 100));
    expect((await lookup('101')).messages.map((message) => message.order_id)).toEqual(['101']);
    expect(sandbox.lookups().at(-1)!.reorder).toEqual({
      hidden: 0,
      outOfOrder: false,
      watermarkPastHidden: false,
    });
  },
);

it('refuses a plan it cannot play', () => {
  expect(() => sandbox.setLookupReorder({ holdMs: -1 })).toThrow(/holdMs/);
  expect(() => sandbox.setLookupReorder({ holdMs: 10, watermark: 'sometimes' })).toThrow(/watermark/);
  expect(() => sandbox.setLookupReorder({ holdMs: 10, share: 2 })).toThrow(/share/);
});
