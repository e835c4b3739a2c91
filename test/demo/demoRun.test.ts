// The demo runner end to end, as `npm run demo` runs it, over each transport: worker and client processes, the
// sandbox drawing faults and the MailDev inbox it relays to. 40% of the sends are accepted and then cut off
// before the answer; the demo's not-sent faults stay on (they are retried); 5xx is off, because its unknown
// outcomes may end an order without a mail, and this test wants exactly one per order. Over HTTP the demo
// verifies by default, so the cut-off sends are settled by the sandbox's lookup instead of the policy. Postgres and Temporal
// are this test run's (DATABASE_URL, TEMPORAL_ADDRESS), so only the runner's own parts start. The report is the
// runner's product here: its facts come from the sandbox, the log rows, Temporal and the inbox's API, and these
// checks pin what it must find. It runs through npm, as the README says, and parses stdout whole.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { RunReport } from '../../dev/demo/report/report';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const ORDERS = 20;
/** Past the runner's own --timeout: a runner still alive then is killed, with everything it started. */
const KILL_AFTER_MS = 120_000;

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
      ...[
        '--accept-then-drop',
        '0.4',
        '--hang',
        '0',
        '--5xx',
        '0',
        '--seed',
        '3',
        '--timeout',
        '90',
        '--json',
      ],
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
    if (transport === 'http') {
      // Over HTTP the demo verifies by default (the sandbox plays the generic API with its lookup): every cut-off
      // send is settled by asking, none by the policy, and each settlement matches what the sandbox had.
      expect(report.verification.verifies).toBe(true);
      const settled = report.customers.unknowns.settledBy;
      expect(settled['verified accepted (lookup)']?.attempts ?? 0).toBeGreaterThan(0);
      expect(report.customers.unknowns.wrong).toBe(0);
      expect(report.unknownOutcomes.attempts).toBe(0);
    } else {
      // SMTP cannot be asked afterwards: the policy settles each cut-off send.
      expect(report.unknownOutcomes.ordersDelivered).toBeGreaterThan(0);
    }
    expect(report.customers.customers.none).toBe(0);
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
    // As a person runs it for a report to keep: `npm run --silent demo -- --json > report.json` (setup's lines
    // go to stderr, and --silent keeps npm's own banners off stdout), so stdout must be the JSON alone.
    const child = spawn('npm', ['run', '--silent', 'demo', '--', ...args], {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.connectionString,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        // The run's bundle, built once for every file: the runner would spend seconds of webpack per run.
        WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
        // And its compiled product's worker, run with plain node: tsx's loader costs CPU at start and per error.
        DEMO_WORKER_JS: path.join(inject('compiledProduct'), 'dist', 'worker.js'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
    // SIGINT is the runner's Ctrl-C: it stops its workers, clients, sandbox and MailDev before it exits.
    const killer = setTimeout(() => child.kill('SIGINT'), KILL_AFTER_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}
