// The stack's standalone Web UI (ui-server, not the dev server's built-in one), driven in headless Debian
// Chromium: an operator filters the workflow list on the OrderMailState search attribute, finds the order
// whose mail is being sent, and opens it.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { defineSearchAttributeKey } from '@temporalio/common';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { createOrder, waitFor } from '../support/testKit';
import { startTestStack, type TestStack } from './stackKit';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');

let testStack: TestStack;
let sandbox: MailSandbox;
let browser: Browser;

beforeAll(async () => {
  testStack = await startTestStack({ workers: 1 });
  sandbox = testStack.stack.sandbox;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
  sandbox?.releaseHeld();
  await testStack?.close();
});

it('finds an order by OrderMailState in the standalone Web UI and opens it', async () => {
  const { stack, client } = testStack;
  if (stack.uiUrl === null) throw new Error('the stack was expected to run its Web UI');
  // The send is held by the mail API, so the order stays in 'sending' while the operator looks.
  const orderId = await createOrder(testStack.db);
  sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
  // The workflow upserts OrderMailState at each transition once the operations work lands; until then the
  // start sets the value the claim gives it, so the UI has something to filter on either way.
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: 'order-confirmation-mail',
    args: [orderId],
    typedSearchAttributes: [{ key: defineSearchAttributeKey('OrderMailState', 'KEYWORD'), value: 'sending' }],
  });
  await waitFor('the send to reach the mail API', async () =>
    sandbox.requests().some((request) => request.orderId === orderId) ? true : undefined,
  );

  const page = await browser.newPage();
  try {
    const query = encodeURIComponent('OrderMailState="sending"');
    await page.goto(`${stack.uiUrl}/namespaces/${stack.namespace}/workflows?query=${query}`);
    // The list shows the filter it applied and the order's workflow, linked to its page.
    await expect
      .poll(() => page.getByText('OrderMailState').first().isVisible(), { timeout: 30_000 })
      .toBe(true);
    const workflowLink = page
      .locator(`a[href*="/workflows/${orderId}/${handle.firstExecutionRunId}"]`)
      .first();
    await workflowLink.waitFor({ timeout: 30_000 });
    await workflowLink.click();

    await page.waitForURL(new RegExp(`/workflows/${orderId}/${handle.firstExecutionRunId}`), {
      timeout: 30_000,
    });
    await expect.poll(() => page.getByText('Running').first().isVisible(), { timeout: 30_000 }).toBe(true);
    await expect
      .poll(() => page.getByText('orderConfirmationMail').first().isVisible(), { timeout: 30_000 })
      .toBe(true);
  } catch (error) {
    await keepScreenshot(page, 'web-ui-find-order');
    throw error;
  } finally {
    await page.close();
  }

  // Let the mail go; the order ends sent, with the one message the UI saw in flight.
  sandbox.releaseHeld();
  expect(await handle.result()).toMatchObject({ result: 'sent', outcome: 'accepted' });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
});

async function keepScreenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true }).catch(() => undefined);
}
