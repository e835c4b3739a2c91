// The orders whose Japanese mail is pinned byte for byte in test/mail/fixtures/ja-default/: recorded from the
// hand-written template (7f78ebe) before the template engine replaced it, so the shipped default template must
// keep rendering exactly these bytes.
import type { OrderForMail } from '../../src/db/orders';

export interface PinnedCase {
  name: string;
  order: OrderForMail;
  replyTo: string | null;
}

/** An order as the demo's contract gives it: yen, its amount the sum of its items, no extras. */
export function yenOrder(
  order: Omit<OrderForMail, 'amountMinor' | 'currency' | 'extra'> & Partial<OrderForMail>,
): OrderForMail {
  const amountMinor = order.items.reduce(
    (sum, item) => sum + item.unitAmountMinor * BigInt(item.quantity),
    0n,
  );
  return { amountMinor, currency: 'JPY', extra: {}, ...order };
}

export const PINNED_SUBJECT = 'ご注文ありがとうございます';

export const PINNED_CASES: PinnedCase[] = [
  {
    name: 'several-items',
    replyTo: null,
    order: yenOrder({
      orderId: '1000123',
      customerName: '山田 太郎',
      customerEmail: 'taro@example.com',
      // 2025-06-30 23:45 UTC is 2025-07-01 08:45 in Japan: the date itself changes.
      orderedAt: new Date('2025-06-30T23:45:00Z'),
      items: [
        { productName: '有機緑茶 100g', quantity: 2, unitAmountMinor: 1200n },
        { productName: '急須（常滑焼）', quantity: 1, unitAmountMinor: 5800n },
        { productName: '湯呑み 5客セット', quantity: 3, unitAmountMinor: 12345678n },
      ],
    }),
  },
  {
    name: 'long-name',
    replyTo: 'support@example.com',
    order: yenOrder({
      orderId: '9007199254740993',
      customerName: '寿限無寿限無五劫の擦り切れ海砂利水魚の水行末雲来末風来末食う寝る処に住む処 様方 '.repeat(
        3,
      ),
      customerEmail: 'jugemu@example.com',
      orderedAt: new Date('2024-02-28T15:00:00Z'),
      items: [
        {
          productName: 'とても長い商品名'.repeat(20) + ' ' + 'x'.repeat(120),
          quantity: 12,
          unitAmountMinor: 99999n,
        },
      ],
    }),
  },
  {
    name: 'html-special',
    replyTo: null,
    order: yenOrder({
      orderId: '42',
      customerName: "<script>alert(\"name\")</script> & 'O'Brien'",
      customerEmail: 'hostile@example.com',
      orderedAt: new Date('2025-12-31T15:30:00Z'),
      items: [
        { productName: '<img src=x onerror=alert(1)>', quantity: 1, unitAmountMinor: 100n },
        { productName: 'O\'Reilly & Sons <b>bold</b> "quoted"', quantity: 3, unitAmountMinor: 250n },
        { productName: '{{order.id}} {% raw %} <%= 1 %> ${process.env}', quantity: 1, unitAmountMinor: 1n },
        {
          productName: '湯呑み\r\nBcc: everyone@example.com\n合計: 0円（税込）',
          quantity: 1,
          unitAmountMinor: 900n,
        },
        { productName: 'evil\u202Egnp.exe', quantity: 2, unitAmountMinor: 0n },
      ],
    }),
  },
];
