// The demo runner end to end, as `npm run demo` runs it, over each transport: worker and client processes, the
// sandbox drawing faults (a third of the sends accepted and then cut off before the answer), and the MailDev
// inbox it relays to. Postgres and Temporal are this test run's (DATABASE_URL, TEMPORAL_ADDRESS), so only the
// runner's own parts start. The report is the runner's product here: its facts come from the sandbox, the log
// rows, Temporal and the inbox's API, and these checks pin what it must find.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { RunReport } from '../../src/demo/report';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const ORDERS = 15;

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('demo-run');
});

afterAll(async () => {
  await database.close();
});

it.each(['smtp', 'http'] as const)(
  'over %s: one mail per order in the inbox, matching what the sandbox accepted, with drops after acceptance',
  async (transport) => {
    const { code, stdout, stderr } = await runDemo([
      ...['--transport', transport, '--orders', String(ORDERS), '--workers', '1', '--clients', '2'],
      ...['--accept-then-drop', '0.3', '--hang', '0', '--seed', '3', '--timeout', '90', '--json'],
    ]);
    expect(code, stderr.slice(-3_000)).toBe(0);
    const report = JSON.parse(stdout) as RunReport;

    expect(report.transport).toBe(transport);
    expect(report.ok).toBe(true);
    const failed = report.invariants
      .filter((invariant) => !invariant.holds)
      .map((invariant) => invariant.name);
    expect(failed).toEqual([]);
    expect(report.invariants.map((invariant) => invariant.name)).toEqual(
      expect.arrayContaining(['no-duplicates-under-assume-sent', 'inbox-matches-provider']),
    );
    // The faults really happened: sends were cut off after the provider kept the mail.
    const drops = report.faults.injected[transport === 'smtp' ? 'drop-after-data' : 'accept-then-drop'] ?? 0;
    expect(drops).toBeGreaterThan(0);
    expect(report.unknownOutcomes.ordersDelivered).toBeGreaterThan(0);
    // What a customer sees: exactly one mail per order, in the sandbox and in the inbox.
    expect(report.messagesPerOrder).toEqual({ '1': ORDERS });
    expect(report.inbox?.messagesPerOrder).toEqual({ '1': ORDERS });
    expect(report.inbox?.messages).toBe(ORDERS);
    expect(report.duplicates.orders).toBe(0);
  },
  150_000,
);

function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/demo.ts', '--profile', 'demo', ...args],
      {
        cwd: PROJECT_ROOT,
        env: {
          ...process.env,
          DATABASE_URL: database.connectionString,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
