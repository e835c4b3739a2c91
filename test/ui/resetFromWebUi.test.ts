// The operator's path in the real Temporal Web UI (the dev server's UI 2.42.1), driven by headless Debian
// Chromium: filter on the search attribute, open the failed order's workflow, fix the address in the database,
// press Reset and confirm; the sandbox then holds exactly one message and the row is sent. The test runs its
// own dev server with a UI port (the run's shared one is headless), set up as `npm run setup` sets one up.
// On failure it leaves a screenshot and the page's HTML under test-artifacts/.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listObservedResets, listOperatorActs } from '../../src/db/operatorActs';
import { readMailLog } from '../../src/db/orderMailLog';
import { startTemporalDevServer, type TemporalDevServer } from '../../dev/devtools/devServer';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { resetHistoryReader } from '../../src/temporal/resetHistory';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

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
const NAMESPACE = 'default';

let server: TemporalDevServer;
let connection: Connection;
let client: Client;
let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let worker: RunningTestWorker;
let profileDirectory: string;
let browser: BrowserContext;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: run \`bash scripts/setup.sh --browser\` (or set CHROMIUM_PATH).`,
    );
  }
  server = await startTemporalDevServer({ namespace: NAMESPACE });
  connection = await Connection.connect({ address: server.address });
  // What `npm run setup` does to a namespace: the dev server here was started without any attribute flags.
  await ensureSearchAttributes(connection, NAMESPACE);
  client = new Client({ connection, namespace: NAMESPACE });
  database = await openTestDatabase('web_ui');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  worker = await startTestWorker(
    // As src/worker.ts gives it: the claim reads a reset from history through the client.
    { db: database.db, mail, settings: testSettings(), readResetOfRun: resetHistoryReader(client) },
    { temporal: { address: server.address, namespace: NAMESPACE } },
  );
  profileDirectory = await mkdtemp(path.join(tmpdir(), 'chromium-profile-'));
  browser = await chromium.launchPersistentContext(profileDirectory, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1400, height: 900 },
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.setDefaultTimeout(20_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (profileDirectory) await rm(profileDirectory, { recursive: true, force: true });
  await worker?.stop();
  await mail?.close();
  await sandbox?.close();
  await database?.close();
  await connection?.close();
  await server?.stop();
});

async function runMail(orderId: string): Promise<void> {
  await client.workflow
    .execute(orderConfirmationMail, { workflowId: orderId, taskQueue: worker.taskQueue, args: [orderId] })
    .catch(() => undefined);
}

/** The first WorkflowTaskCompleted of the order's run: what "reset to the first workflow task" means. */
async function firstWorkflowTaskCompleted(orderId: string): Promise<number> {
  const history = await client.workflow.getHandle(orderId).fetchHistory();
  const event = history.events?.find(
    (each) => each.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  );
  return Number(event?.eventId);
}

/** Runs a visibility query in the UI's manual search box until `visible` shows (visibility is eventual). */
async function searchUntilVisible(query: string, orderId: string): Promise<void> {
  await page.goto(`${server.uiUrl}/namespaces/${NAMESPACE}/workflows`);
  await page.getByTestId('toggle-manual-query').click();
  // UI 2.42 (the go-installed CLI 1.5.1, the stack) and 2.54 (the prebuilt CLI 1.9.1) name the box apart.
  const input = page.locator(
    '[data-testid="manual-search-input"], [data-testid="workflow-manual-search-input"]',
  );
  const link = page.getByRole('link', { name: orderId, exact: true });
  await waitFor(
    `workflow ${orderId} in the UI's list for ${query}`,
    async () => {
      await input.fill(query);
      await page
        .locator('[data-testid="manual-search-button"], [data-testid="workflow-manual-search-button"]')
        .click();
      return (await link
        .waitFor({ state: 'visible', timeout: 2_000 })
        .then(() => true)
        .catch(() => false))
        ? true
        : undefined;
    },
    45_000,
  );
}

/** The UI's own updates (a filtered list, the reset's banner): expect.poll's 1 s default missed the banner once. */
const UI_WAIT_MS = 15_000;

async function keepEvidence(name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true }).catch(() => undefined);
  await writeFile(path.join(ARTIFACTS, `${name}.html`), await page.content().catch(() => '')).catch(
    () => undefined,
  );
}

it('an operator finds the failed order by its search attribute, fixes the address, resets it in the UI: one mail', async () => {
  const sentOrderId = await createOrder(database.db);
  await runMail(sentOrderId);
  const failedOrderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
  await runMail(failedOrderId);
  expect(await readMailLog(database.db, failedOrderId)).toMatchObject({
    state: 'failed',
    outcome: 'rejected',
  });
  expect(sandbox.messagesFor(failedOrderId)).toHaveLength(0);
  const firstRunId = (await client.workflow.getHandle(failedOrderId).describe()).runId;

  try {
    // 1. Find it: both orders are indexed, and the filter keeps only the failed one.
    await searchUntilVisible(`WorkflowId="${sentOrderId}"`, sentOrderId);
    await searchUntilVisible('OrderMailState="failed"', failedOrderId);
    expect(decodeURIComponent(page.url())).toContain('OrderMailState="failed"');
    await expect
      .poll(() => page.getByRole('link', { name: sentOrderId, exact: true }).count(), { timeout: UI_WAIT_MS })
      .toBe(0);
    await page.getByRole('link', { name: failedOrderId, exact: true }).first().click();
    await page.waitForURL(`**/workflows/${failedOrderId}/**`);

    // 2. Fix the cause.
    await database.db.query(`UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = $1`, [
      failedOrderId,
    ]);

    // 3. Reset to the first workflow task, with a reason, and confirm.
    const eventId = await firstWorkflowTaskCompleted(failedOrderId);
    await page.getByRole('button', { name: 'Reset', exact: true }).click();
    const dialog = page.locator('dialog[open][data-testid="reset-confirmation-modal"]');
    await dialog.getByTestId('workflow-reset-event-id-select-button').click();
    await dialog.getByRole('option', { name: `${eventId} - WorkflowTaskCompleted`, exact: true }).click();
    await dialog.getByTestId('reset-reason').fill('address corrected by the operator');
    await dialog.getByTestId('confirm-modal-button').click();
    await expect
      .poll(() => page.getByText('This Workflow has been reset').count(), { timeout: UI_WAIT_MS })
      .toBeGreaterThan(0);
  } catch (error) {
    await keepEvidence('reset-from-web-ui');
    throw error;
  }

  // 4. Exactly one message, the row sent, and the new run says so.
  const result = await client.workflow.getHandle<typeof orderConfirmationMail>(failedOrderId).result();
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
  const messages = sandbox.messagesFor(failedOrderId);
  expect(messages).toHaveLength(1);
  expect(messages[0]!.to).toBe('fixed@example.com');
  expect(await readMailLog(database.db, failedOrderId)).toMatchObject({
    state: 'sent',
    outcome: 'accepted',
    attempts: 2,
  });
  const history = await client.workflow.getHandle(failedOrderId).fetchHistory();
  const reset = history.events?.find(
    (event) =>
      event.workflowTaskFailedEventAttributes?.cause ===
      temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
  );
  expect(reset?.workflowTaskFailedEventAttributes?.failure?.message).toContain(
    'address corrected by the operator',
  );

  // 5. The reset left an observed reset, written by the new run's claim from what the history recorded, so
  //    `ops status` shows it beside the operators' acts after the history is gone; it is no operator's act.
  expect(await listObservedResets(database.db, failedOrderId)).toMatchObject([
    {
      reason: expect.stringContaining('address corrected by the operator') as unknown,
      temporalIdentity: 'history-service',
      baseRunId: firstRunId,
      newRunId: (await client.workflow.getHandle(failedOrderId).describe()).runId,
    },
  ]);
  expect(await listOperatorActs(database.db, failedOrderId)).toEqual([]);
}, 180_000);
