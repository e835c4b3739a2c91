// deploy/grafana/order-confirmation-mail.json, against what a running worker really exports: a worker process
// sends orders down each path (accepted, rejected, not sent then accepted, unknown), its /metrics is scraped,
// and every metric each panel's query names must be in that scrape. A dashboard whose query names a metric
// nobody exports shows "No data" at 3 a.m. and nobody can tell an idle system from a wrong name; one whose
// unit is not its histogram's shows a latency 1000× off.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { getFreePort } from '../../src/shared/freePort';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const DASHBOARD = path.join(__dirname, '..', '..', 'deploy', 'grafana', 'order-confirmation-mail.json');
const PRODUCTION_DOC = path.join(__dirname, '..', '..', 'docs', 'production.md');

interface Panel {
  title: string;
  targets?: { expr: string; refId: string }[];
  panels?: Panel[];
  fieldConfig?: {
    defaults?: { unit?: string };
    overrides?: {
      matcher: { id: string; options?: unknown };
      properties: { id: string; value?: unknown }[];
    }[];
  };
}

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let worker: WorkerProcess;
let httpAddress: string;
const taskQueue = `dashboard-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  database = await openTestDatabase('dashboard');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
  httpAddress = `127.0.0.1:${await getFreePort()}`;
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    WORKER_HTTP_BIND_ADDRESS: httpAddress,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    MAIL_VERIFY: 'off',
    SEND_RETRY_INITIAL_MS: '200',
    SEND_RETRY_MAX_MS: '400',
  });
  await worker.started;
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

/** Every metric name a PromQL expression names: identifiers followed by `{`, `[` or `)` that are not functions. */
function metricNames(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '{}').replace(/"[^"]*"/g, '""');
  const words = withoutLabels.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return [...new Set(words.filter((word) => /^(order_mail|temporal)_/.test(word)))];
}

function panelsOf(panels: Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...panelsOf(panel.panels ?? [])]);
}

// Runs first, on a worker that has mailed nothing yet: an alert on increase() of a counter misses the counter's
// first increment when its series is born at 1, so the series the single-order alerts watch must exist at 0.
it('the counters a single-order alert watches are exported at 0 before anything happened', async () => {
  const text = await waitFor('the worker to export its counters', async () => {
    const body = await (await fetch(`http://${httpAddress}/metrics`)).text();
    return body.includes('order_mail_orders_left_without_mail_total') ? body : undefined;
  });
  const valueOf = (name: string, labels: Record<string, string>): number | undefined => {
    const line = text
      .split('\n')
      .find(
        (candidate) =>
          candidate.startsWith(`${name}{`) &&
          Object.entries(labels).every(([key, value]) => candidate.includes(`${key}="${value}"`)),
      );
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  expect(
    valueOf('order_mail_unknown_outcomes_total', { settled_by: 'assume-sent', verification: 'inconclusive' }),
  ).toBe(0);
  expect(valueOf('order_mail_orders_left_without_mail_total', { reason: 'closed-without-row' })).toBe(0);
  expect(valueOf('order_mail_orders_left_without_mail_total', { reason: 'workflow-id-taken' })).toBe(0);
}, 60_000);

it('every query of the dashboard names only metrics a running worker exports', async () => {
  const paths = {
    accepted: null,
    rejected: { kind: 'status', status: 422 },
    'not sent, then accepted': { kind: 'status', status: 503 },
    unknown: { kind: 'accept-then-drop' },
  } as const;
  for (const fault of Object.values(paths)) {
    const orderId = await createOrder(database.db);
    if (fault !== null) sandbox.queueFault(orderId, fault);
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue,
      args: [orderId],
    });
    await handle.result().catch(() => undefined);
    expect((await readMailLog(database.db, orderId))?.state).not.toBe('sending');
    if (fault === null) {
      // A second run for an order already sent (another workflow id): its claim finds it sent, a conflict.
      await client.workflow.execute(orderConfirmationMail, {
        workflowId: `${orderId}-again`,
        taskQueue,
        args: [orderId],
      });
    }
  }

  const scraped = await waitFor('the worker to export the product and SDK metrics', async () => {
    const text = await (await fetch(`http://${httpAddress}/metrics`)).text();
    const names = new Set(
      text
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('#'))
        .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? ''),
    );
    return names.has('order_mail_unknown_outcomes_total') && names.has('order_mail_claim_conflicts_total')
      ? names
      : undefined;
  });

  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; title: string };
  const queries = panelsOf(dashboard.panels).flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
  );
  expect(queries.length).toBeGreaterThan(5);
  const missing = queries.flatMap(({ panel, expr }) =>
    metricNames(expr)
      .filter((name) => !scraped.has(name))
      .map((name) => `${panel}: ${name}`),
  );
  expect(missing).toEqual([]);
  // Both kinds are on it: the product's and the SDK's.
  const named = new Set(queries.flatMap(({ expr }) => metricNames(expr)));
  expect([...named].some((name) => name.startsWith('order_mail_'))).toBe(true);
  expect([...named].some((name) => name.startsWith('temporal_'))).toBe(true);
  // The task queue is a dashboard variable, never a constant.
  for (const { panel, expr } of queries) expect(expr, panel).not.toMatch(/task_queue\s*=~?\s*"(?!\$)/);
}, 120_000);

/** The unit Grafana shows a target in: an override for its refId, else the panel's. */
function unitOf(panel: Panel, refId: string): string | undefined {
  const override = (panel.fieldConfig?.overrides ?? []).find(
    (candidate) => candidate.matcher.id === 'byFrameRefID' && candidate.matcher.options === refId,
  );
  const property = override?.properties.find((candidate) => candidate.id === 'unit');
  return (property?.value as string | undefined) ?? panel.fieldConfig?.defaults?.unit;
}

/**
 * The unit a histogram's buckets are really in, from what the scrape shows: a unit suffix in its name, else its
 * bucket bounds. A duration in whole milliseconds has bounds ≥ 1 reaching past 1000; one in seconds has bounds
 * below 1 (nobody buckets a mail or a task at under a millisecond).
 */
function scrapedUnit(name: string, bounds: number[]): 's' | 'ms' | 'unknown' {
  if (name.endsWith('_seconds')) return 's';
  if (name.endsWith('_milliseconds')) return 'ms';
  if (bounds.length === 0) return 'unknown';
  if (Math.min(...bounds) < 1) return 's';
  if (bounds.every(Number.isInteger) && Math.max(...bounds) >= 1000) return 'ms';
  return 'unknown';
}

it("each latency panel's unit is the unit its histogram's scraped buckets are in", async () => {
  // Runs after the test above: every path has run, so each histogram the dashboard names has buckets.
  const text = await (await fetch(`http://${httpAddress}/metrics`)).text();
  const boundsOf = (histogram: string): number[] =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${histogram}_bucket{`))
      .map((line) => /le="([^"]+)"/.exec(line)?.[1] ?? '+Inf')
      .filter((le) => le !== '+Inf')
      .map(Number);

  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const checked = panelsOf(dashboard.panels).flatMap((panel) =>
    (panel.targets ?? []).flatMap((target) =>
      [...target.expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)_bucket\b/g)].map(([, histogram = '']) => ({
        target: `${panel.title} [${target.refId}]: ${histogram}`,
        declared: unitOf(panel, target.refId),
        scraped: scrapedUnit(histogram, boundsOf(histogram)),
      })),
    ),
  );
  expect(checked.length).toBeGreaterThan(5);
  const wrong = checked.filter(({ declared, scraped }) => declared !== scraped);
  expect(wrong).toEqual([]);
}, 60_000);

it("docs/production.md's metrics table names every metric the worker exports", async () => {
  // Runs after the paths above, so the scrape holds what a worker that has worked exports.
  const text = await (await fetch(`http://${httpAddress}/metrics`)).text();
  const families = new Set(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => (/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? '').replace(/_(bucket|sum|count)$/, '')),
  );
  const doc = readFileSync(PRODUCTION_DOC, 'utf8');
  const table = new Set([...doc.matchAll(/^\s*\| `([a-z_:]+)` \|/gm)].map(([, name = '']) => name));
  expect([...families].filter((name) => !table.has(name)).sort()).toEqual([]);
}, 60_000);
