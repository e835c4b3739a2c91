// After a small demo run (two orders through the real workflow, the HTTP sandbox relaying what it accepted to
// MailDev), a real browser (Debian chromium, fonts-noto-cjk: `bash scripts/setup.sh --browser`) opens the
// inbox, finds exactly one mail for the chosen order, opens it and checks what a customer would see; a
// hostile item name shows as text and runs nothing. The screenshot is kept for the README.

import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMailDev, type RunningMailDev } from '../../dev/devtools/mailDev';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const CHROMIUM = '/usr/bin/chromium';
// The README's copy is refreshed only on request (UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean.
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? path.join(__dirname, '..', '..', 'docs', 'screenshots', 'confirmation-mail.png')
    : path.join(__dirname, '..', '..', 'test-artifacts', 'confirmation-mail.png');
const HOSTILE_ITEM = '<img src=x onerror=alert(1)>';

let database: TestDatabase;
let mailDev: RunningMailDev;
let sandbox: MailSandbox;
let mail: MailTransport;
let worker: RunningTestWorker;
let client: Client;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash scripts/setup.sh --browser`);
  database = await openTestDatabase('browser');
  mailDev = await startMailDev();
  sandbox = await startMailSandbox({ relayTo: { host: mailDev.smtpHost, port: mailDev.smtpPort } });
  mail = testMailClient(sandbox.url);
  worker = await startTestWorker({ db: database.db, mail, settings: testSettings() });
  client = await connectTestClient();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await client?.connection.close();
  await mail?.close();
  await sandbox?.close();
  await mailDev?.stop();
  await database?.close();
});

interface InboxEntry {
  id: string;
  headers: Record<string, string>;
}

async function inbox(): Promise<InboxEntry[]> {
  const response = await fetch(`${mailDev.webUrl}/api/email`);
  return (await response.json()) as InboxEntry[];
}

/** The frame that shows the whole HTML part (the inbox list only previews its start), or the page itself. */
async function mailBodyFrame(page: Page, text: string): Promise<Frame> {
  for (;;) {
    for (const frame of page.frames()) {
      const found = await frame
        .locator('body')
        .innerText({ timeout: 500 })
        .then((body) => body.includes(text))
        .catch(() => false);
      if (found) return frame;
    }
    await page.waitForTimeout(200);
  }
}

it('the inbox holds one confirmation for the chosen order; it renders, and the hostile item is only text', async () => {
  const chosenEmail = 'hanako.browser@example.com';
  const chosen = await createOrder(database.db, {
    customerName: '佐藤 花子',
    customerEmail: chosenEmail,
    items: [
      { productName: '有機緑茶 100g', quantity: 2, unitPriceYen: 1200 },
      { productName: HOSTILE_ITEM, quantity: 1, unitPriceYen: 300 },
    ],
  });
  const other = await createOrder(database.db);
  // The chosen order's provider takes the mail and drops the connection: still exactly one in the inbox.
  sandbox.queueFault(chosen, { kind: 'accept-then-drop' });
  for (const orderId of [chosen, other]) {
    await client.workflow.execute(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: worker.taskQueue,
      args: [orderId],
    });
  }
  await sandbox.relaysSettled();

  const forChosen = (await inbox()).filter((entry) => entry.headers['x-order-id'] === chosen);
  expect(forChosen).toHaveLength(1);

  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  let dialogs = 0;
  page.on('dialog', (dialog) => {
    dialogs += 1;
    void dialog.dismiss();
  });
  await page.goto(mailDev.webUrl);
  // The inbox list, as a person sees it: one entry addressed to the chosen customer.
  await expect.poll(() => page.getByText(chosenEmail).count(), { timeout: 20_000 }).toBe(1);

  await page.goto(`${mailDev.webUrl}/#/email/${forChosen[0]!.id}`);
  await expect
    .poll(() => page.getByText('ご注文ありがとうございます').count(), { timeout: 20_000 })
    .toBeGreaterThan(0);
  const body = await mailBodyFrame(page, '合計（税込）');
  const text = await body.locator('body').innerText();
  expect(text).toContain(chosen);
  expect(text).toContain('有機緑茶 100g');
  expect(text).toContain('2,700円');
  expect(text).toContain(HOSTILE_ITEM);
  // Shown as text, never parsed as markup: no such element exists, and no handler ran.
  expect(await body.locator('img[src="x"]').count()).toBe(0);
  expect(dialogs).toBe(0);

  // MailDev sizes the mail's iframe to its content after load; the screenshot waits for the whole mail.
  await expect
    .poll(async () => (await page.locator('iframe').first().boundingBox())?.height ?? 0, { timeout: 20_000 })
    .toBeGreaterThan(400);
  mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  await page.close();
});
