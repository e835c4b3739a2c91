// `npm run ops -- preview <order>`: the order's mail as the worker renders it (its templates, its sender and
// subject), printed and nothing else: no row, no attempt, no message. Real Postgres, the CLI's main().
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/ops';
import type { OrderMailPreview } from '../../src/ops/previewOrderMail';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let dir: string;

beforeAll(async () => {
  database = await openTestDatabase('ops_preview');
  dir = mkdtempSync(path.join(tmpdir(), 'preview-template-'));
  const files = {
    'mail.json': '{ "name": "en-preview", "locale": "en-US", "timeZone": "UTC" }',
    'subject.liquid': 'Order {{ order.id }}',
    'text.liquid': 'Hi {{ order.customerName }}: {{ order.total | money }}\n',
    'html.liquid': '<p>{{ order.customerName }}</p>\n',
  };
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(dir, file), content);
});
afterAll(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

async function preview(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['preview', ...argv], env, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function tableCounts(orderId: string) {
  const { rows } = await database.db.query<{ logs: number; attempts: number }>(
    `SELECT (SELECT count(*)::int FROM order_mail_log WHERE order_id = $1) AS logs,
            (SELECT count(*)::int FROM order_mail_attempts WHERE order_id = $1) AS attempts`,
    [orderId],
  );
  return rows[0];
}

describe('ops preview', () => {
  it('renders the order with the configured templates and identity, and writes nothing', async () => {
    const orderId = await createOrder(database.db, { customerName: 'Ada <Lovelace>' });
    const env = {
      DATABASE_URL: database.connectionString,
      MAIL_TEMPLATE_DIR: dir,
      MAIL_FROM: 'Shop <shop@example.com>',
    };
    const { code, out, err } = await preview(env, orderId, '--json');
    expect(err).toBe('');
    expect(code).toBe(0);
    const rendered = JSON.parse(out) as OrderMailPreview;
    expect(rendered).toMatchObject({
      orderId,
      template: { name: 'en-preview', dir },
      from: 'Shop <shop@example.com>',
      subject: `Order ${orderId}`,
      text: 'Hi Ada <Lovelace>: ¥8,200\n',
      html: '<p>Ada &lt;Lovelace&gt;</p>\n',
    });
    expect(rendered.template.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await tableCounts(orderId)).toEqual({ logs: 0, attempts: 0 });
  });

  it('without MAIL_TEMPLATE_DIR, the shipped Japanese mail', async () => {
    const orderId = await createOrder(database.db, { customerName: '佐藤 花子' });
    const { code, out } = await preview({ DATABASE_URL: database.connectionString }, orderId);
    expect(code).toBe(0);
    expect(out).toContain('Template: ja-default sha256:');
    expect(out).toContain('Subject:  ご注文ありがとうございます');
    expect(out).toContain('佐藤 花子 様');
  });

  it('refuses an unknown order, a broken template and a missing DATABASE_URL', async () => {
    expect(await preview({ DATABASE_URL: database.connectionString }, '999999999999')).toMatchObject({
      code: 1,
      err: expect.stringContaining('UNKNOWN_ORDER') as unknown,
    });
    const broken = mkdtempSync(path.join(tmpdir(), 'preview-broken-'));
    try {
      expect(
        await preview({ DATABASE_URL: database.connectionString, MAIL_TEMPLATE_DIR: broken }, '1'),
      ).toMatchObject({ code: 2, err: expect.stringContaining('mail.json: cannot be read') as unknown });
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
    expect(await preview({}, '1')).toMatchObject({
      code: 2,
      err: expect.stringContaining('DATABASE_URL') as unknown,
    });
  });
});
