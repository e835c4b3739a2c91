// The confirmation mail as the customer gets it: both parts pinned by file snapshots (committed under
// __snapshots__/, readable as they are), hostile order data rendered harmless, and an order of 100 items.

import { describe, expect, it } from 'vitest';
import type { OrderForMail } from '../../src/db/orders';
import { yenOrder } from './jaDefaultOrders';
import { renderConfirmationMail, type MailIdentity } from '../../src/mail/confirmationMail';
import { escapeHtml, html } from '../../src/mail/htmlEscape';
import { formatJstDateTime, formatYen } from '../../src/mail/japaneseFormat';

const IDENTITY: MailIdentity = {
  from: 'Shop <shop@example.com>',
  replyTo: null,
  subject: 'ご注文ありがとうございます',
};

function order(overrides: Partial<OrderForMail> = {}): OrderForMail {
  return yenOrder({
    orderId: '1000123',
    customerName: '山田 太郎',
    customerEmail: 'taro@example.com',
    // 2025-06-30 23:45 UTC is 2025-07-01 08:45 in Japan: the date itself changes.
    orderedAt: new Date('2025-06-30T23:45:00Z'),
    items: [
      { productName: '有機緑茶 100g', quantity: 2, unitAmountMinor: 1200n },
      { productName: '急須（常滑焼）', quantity: 1, unitAmountMinor: 5800n },
    ],
    ...overrides,
  });
}

const HOSTILE_ITEMS = [
  { productName: '<img src=x onerror=alert(1)>', quantity: 1, unitAmountMinor: 100n },
  { productName: '"; DROP TABLE orders; --', quantity: 3, unitAmountMinor: 250n },
  { productName: "O'Reilly & Sons <b>bold</b>", quantity: 1, unitAmountMinor: 1n },
  // A line break would let a name forge a line of its own in the text part.
  { productName: '湯呑み\n合計: 0円（税込）', quantity: 1, unitAmountMinor: 900n },
  // U+202E RIGHT-TO-LEFT OVERRIDE would show the rest of the line reversed.
  { productName: 'evil\u202Egnp.exe', quantity: 1, unitAmountMinor: 10n },
];

/** The sequence of tags, without attributes or text: the document's structure. */
function tagStructure(markup: string): string[] {
  return [...markup.matchAll(/<\/?([a-zA-Z0-9!]+)/g)].map((match) => match[0]);
}

describe('the confirmation mail', () => {
  it('renders the text part as pinned in its snapshot', async () => {
    const mail = renderConfirmationMail(order(), IDENTITY);
    await expect(mail.text).toMatchFileSnapshot('./__snapshots__/confirmation-mail.txt');
  });

  it('renders the HTML part as pinned in its snapshot', async () => {
    const mail = renderConfirmationMail(order(), IDENTITY);
    await expect(mail.html).toMatchFileSnapshot('./__snapshots__/confirmation-mail.html');
  });

  it('carries the customer, the order number, the JST date, every item in yen, and the total', () => {
    const { text, html: markup } = renderConfirmationMail(order(), IDENTITY);
    for (const part of [text, markup]) {
      expect(part).toContain('山田 太郎 様');
      expect(part).toContain('1000123');
      expect(part).toContain('2025年7月1日 08:45（日本時間）');
      expect(part).toContain('有機緑茶 100g');
      expect(part).toContain('1,200円');
      expect(part).toContain('2,400円');
      expect(part).toContain('5,800円');
      expect(part).toContain('8,200円');
    }
  });

  it('addresses the envelope from the order and the configured identity', () => {
    const mail = renderConfirmationMail(order(), { ...IDENTITY, replyTo: 'support@example.com' });
    expect(mail).toMatchObject({
      orderId: '1000123',
      to: 'taro@example.com',
      from: 'Shop <shop@example.com>',
      replyTo: 'support@example.com',
      subject: 'ご注文ありがとうございます',
    });
    // With a reply-to, the closing invites replies instead of calling the mail send-only.
    expect(mail.text).toContain('このメールにご返信ください');
    expect(renderConfirmationMail(order(), IDENTITY).text).toContain('送信専用');
  });

  it('is deterministic: the same order renders the same bytes, whatever the process time zone', () => {
    const first = renderConfirmationMail(order(), IDENTITY);
    const again = renderConfirmationMail(structuredClone(order()), IDENTITY);
    expect(again).toEqual(first);
  });
});

describe('hostile order data', () => {
  const hostile = order({ customerName: '<script>alert("name")</script>', items: HOSTILE_ITEMS });
  const mail = renderConfirmationMail(hostile, IDENTITY);

  it('is escaped in the HTML part: no markup gets in, every name shows as its characters', () => {
    expect(mail.html).not.toMatch(/<img|<script|<b>/i);
    expect(mail.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(mail.html).toContain('&quot;; DROP TABLE orders; --');
    expect(mail.html).toContain('O&#39;Reilly &amp; Sons &lt;b&gt;bold&lt;/b&gt;');
    expect(mail.html).toContain('&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt; 様');
  });

  it('leaves the HTML structure exactly as a harmless order of the same size has it', () => {
    const harmless = renderConfirmationMail(
      order({
        items: HOSTILE_ITEMS.map((item, index) => ({ ...item, productName: `item ${index}` })),
      }),
      IDENTITY,
    );
    expect(tagStructure(mail.html)).toEqual(tagStructure(harmless.html));
  });

  it('stays plain in the text part, one line per name: no forged lines, no bidi override', () => {
    expect(mail.text).toContain('・<img src=x onerror=alert(1)>');
    expect(mail.text).toContain('・"; DROP TABLE orders; --');
    expect(mail.text.split('\n').filter((line) => line.startsWith('合計'))).toHaveLength(1);
    expect(mail.text).toContain('・湯呑み 合計: 0円（税込）');
    expect(mail.text).not.toContain('\u202E');
    expect(mail.html).not.toContain('\u202E');
  });

  it('is pinned in snapshots too', async () => {
    await expect(mail.text).toMatchFileSnapshot('./__snapshots__/confirmation-mail.hostile.txt');
    await expect(mail.html).toMatchFileSnapshot('./__snapshots__/confirmation-mail.hostile.html');
  });
});

describe('an order of 100 items', () => {
  const items = Array.from({ length: 100 }, (_, index) => ({
    productName: `商品 ${String(index + 1).padStart(3, '0')}`,
    quantity: (index % 5) + 1,
    unitAmountMinor: BigInt(100 * (index + 1)),
  }));
  const mail = renderConfirmationMail(order({ items }), IDENTITY);
  const expectedTotal = items.reduce((sum, item) => sum + item.unitAmountMinor * BigInt(item.quantity), 0n);

  it('lists every item once in each part, and the total is their sum', () => {
    expect(mail.text.split('\n').filter((line) => line.startsWith('・'))).toHaveLength(100);
    const body = /<tbody>([\s\S]*)<\/tbody>/.exec(mail.html)?.[1] ?? '';
    expect(body.match(/<tr>/g)).toHaveLength(100);
    expect(expectedTotal).toBe(1_535_000n); // computed independently: sum of 100·i·((i-1) mod 5 + 1)
    expect(mail.text).toContain(`合計: ${formatYen(expectedTotal)}（税込）`);
    expect(mail.html).toContain(`font-weight:bold;">${formatYen(expectedTotal)}</td>`);
    expect(mail.text).toContain('・商品 100\n    10,000円 × 5点 = 50,000円');
  });

  it('is pinned in snapshots', async () => {
    await expect(mail.text).toMatchFileSnapshot('./__snapshots__/confirmation-mail.100-items.txt');
    await expect(mail.html).toMatchFileSnapshot('./__snapshots__/confirmation-mail.100-items.html');
  });
});

describe('formatting', () => {
  it.each([
    [0n, '0円'],
    [999n, '999円'],
    [1000n, '1,000円'],
    [1234567n, '1,234,567円'],
    // Beyond Number.MAX_SAFE_INTEGER: amounts are BIGINT and stay exact.
    [12345678901234567890n, '12,345,678,901,234,567,890円'],
    [-1500n, '-1,500円'],
  ])('formatYen(%s) is %s', (amount, expected) => {
    expect(formatYen(amount)).toBe(expected);
  });

  it.each([
    ['2025-12-31T15:30:00Z', '2026年1月1日 00:30'],
    ['2025-01-05T00:03:00Z', '2025年1月5日 09:03'],
    ['2024-02-28T15:00:00Z', '2024年2月29日 00:00'],
  ])('the JST date of %s is %s', (instant, expected) => {
    expect(formatJstDateTime(new Date(instant))).toBe(expected);
  });

  it('html`` escapes every interpolated value once, and nests without double escaping', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p title="${'"x" & \'y\''}">${inner}${['<', html`<br>`, 3]}</p>`.toString()).toBe(
      '<p title="&quot;x&quot; &amp; &#39;y&#39;"><b>&lt;i&gt;</b>&lt;<br>3</p>',
    );
    expect(escapeHtml('&amp;')).toBe('&amp;amp;');
  });
});
