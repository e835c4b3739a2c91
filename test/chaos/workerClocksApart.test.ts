// Worker clocks apart (issue 13): two real worker processes whose clocks are a minute apart (libfaketime:
// one 30 s ahead, one 30 s behind), and a reset racing a late claim of the run it closed.
//
//   1. Run 1 runs on the worker AHEAD: claim, send (the sandbox answers 429: not sent), record, back off.
//   2. Its next claim leaves that worker and is held on the wire (a proxy holds the worker's Postgres bytes),
//      and the worker is cut off from Temporal, so it can take no more tasks.
//   3. An operator resets the workflow to its first workflow task: run 1 closes, run 2 starts on the worker
//      BEHIND, claims the failed row and sends (the sandbox keeps the answer back: the send is in flight).
//   4. Run 1's held claim is released: an orphan, arriving late, from the clock that is ahead.
//   5. The sandbox answers run 2's send.
//
// The fence must hold whatever the clocks say: exactly one message, the row sent/accepted by run 2 with the
// provider's id, nothing left 'sending', and run 2 completed (no ClaimHeldElsewhere, no ClaimNotSettled loop).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findTemporalCli } from '../../dev/devtools/findTemporalCli';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { getFreePort } from '../../src/shared/freePort';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { startHoldableProxy } from './holdableProxy';

const AHEAD = '+30s';
const BEHIND = '-30s';

let database: TestDatabase;
let client: Client;

beforeAll(async () => {
  database = await openTestDatabase('clocks');
  client = await connectTestClient();
});
afterAll(async () => {
  await client.connection.close();
  await database.close();
});

it('libfaketime moves the wall clock of a Node process by the offset asked (and leaves the rest alone)', () => {
  expect(Math.abs(skewOf(AHEAD) - 30_000)).toBeLessThan(5_000);
  expect(Math.abs(skewOf(BEHIND) + 30_000)).toBeLessThan(5_000);
});

it('a killed predecessor’s semaphore under the same pid does not stop a shifted process from starting', () => {
  // What CI met: a SIGKILLed process leaves /dev/shm/sem.faketime_sem_<pid> behind, and pids are reused.
  // Leave such files under the next pids this machine will hand out, then start shifted processes.
  const next = Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8')) + 1;
  const stale = Array.from({ length: 300 }, (_, i) => next + i).flatMap((pid) => [
    `/dev/shm/sem.faketime_sem_${pid}`,
    `/dev/shm/faketime_shm_${pid}`,
  ]);
  const planted = stale.filter((file) => !existsSync(file));
  for (const file of planted) writeFileSync(file, Buffer.alloc(32));
  try {
    for (let i = 0; i < 3; i++) expect(Math.abs(skewOf(AHEAD) - 30_000)).toBeLessThan(5_000);
  } finally {
    for (const file of planted) rmSync(file, { force: true });
  }
});

// The two policies side by side, each with its own order, workers, proxies and sandbox (a release of held
// answers is the whole sandbox's).
describe.concurrent.each<UnknownOutcomePolicy>(['assume-sent', 'assume-failed'])('under %s', (policy) => {
  it('a late claim of a reset run, on a worker a minute ahead, cannot take the open run’s claim', async () => {
    const taskQueue = `clocks-${policy}-${Date.now()}`;
    const sandbox: MailSandbox = await startMailSandbox();
    const orderId = await createOrder(database.db);
    // Run 1's send is refused for now; the next request (run 2's) is kept, its answer held until released.
    sandbox.queueFault(orderId, { kind: 'status', status: 429 });
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });

    const pg = new URL(database.connectionString);
    const pgProxy = await startHoldableProxy({ host: pg.hostname, port: Number(pg.port) });
    const [temporalHost, temporalPort] = inject('temporalAddress').split(':');
    const temporalProxy = await startHoldableProxy({ host: temporalHost!, port: Number(temporalPort) });
    const metricsPort = await getFreePort('127.0.0.1');
    const viaProxy = new URL(database.connectionString);
    viaProxy.host = pgProxy.address;

    const env = {
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      MAIL_API_BASE_URL: sandbox.url,
      MAIL_API_KEY: 'sandbox-key',
      UNKNOWN_OUTCOME_POLICY: policy,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      // Run 2's send stays in flight while the late claim runs: the client waits long for its answer.
      MAIL_HEADERS_TIMEOUT_MS: '40000',
      MAIL_OVERALL_TIMEOUT_MS: '45000',
      SEND_ACTIVITY_TIMEOUT_MS: '60000',
      WORKER_SHUTDOWN_GRACE_MS: '60000',
      // Room for the worker behind to start between run 1's first attempt and its second claim.
      SEND_RETRY_INITIAL_MS: '12000',
      SEND_RETRY_MAX_MS: '12000',
    };
    const ahead = spawnWorkerProcess({
      ...env,
      ...clockShiftedBy(AHEAD),
      DATABASE_URL: viaProxy.toString(),
      TEMPORAL_ADDRESS: temporalProxy.address,
      TEMPORAL_METRICS_BIND_ADDRESS: `127.0.0.1:${metricsPort}`,
    });
    let behind: WorkerProcess | null = null;
    try {
      await ahead.started;
      const run1 = await client.workflow.start(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue,
        args: [orderId],
      });

      // 1. Run 1's first attempt is refused and recorded; it backs off. From now on its Postgres bytes wait.
      await waitFor('run 1 to record its refused attempt', async () =>
        (await readMailLog(database.db, orderId))?.state === 'failed' ? true : undefined,
      );
      pgProxy.hold();
      // The worker behind starts now: run 1's tasks stay with the worker ahead (its sticky queue).
      behind = spawnWorkerProcess({
        ...env,
        ...clockShiftedBy(BEHIND),
        DATABASE_URL: database.connectionString,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
      });
      await behind.started;

      // 2. Run 1's second claim leaves the worker ahead and waits on the wire; that worker loses Temporal.
      await waitFor(
        'run 1’s second claim to be on the wire',
        async () => (pgProxy.heldBytes() > 0 ? true : undefined),
        30_000,
      );
      const claimsBefore = await localClaimsFinished(metricsPort);
      temporalProxy.cut();

      // 3. The operator's reset: run 1 closes, run 2 runs on the worker behind.
      await temporalCli([
        'workflow',
        'reset',
        '-w',
        orderId,
        '-r',
        run1.firstExecutionRunId,
        '-t',
        'FirstWorkflowTask',
        '--reason',
        'clocks apart: reset',
      ]);
      const run2Id = (await client.workflow.getHandle(orderId).describe()).runId;
      expect(run2Id).not.toBe(run1.firstExecutionRunId);
      const run2 = client.workflow.getHandle<typeof orderConfirmationMail>(orderId, run2Id);
      await waitFor(
        'run 2 to send (or to close without sending)',
        async () =>
          sandbox.requests().filter((request) => request.orderId === orderId).length >= 2 ||
          (await run2.describe()).status.name !== 'RUNNING'
            ? true
            : undefined,
        30_000,
      );

      // 4. The late claim of closed run 1 reaches Postgres, from the clock a minute ahead of run 2's.
      pgProxy.release();
      await waitFor(
        'run 1’s late claim to finish',
        async () => ((await localClaimsFinished(metricsPort)) > claimsBefore ? true : undefined),
        30_000,
      );

      // 5. Run 2's send is answered: accepted.
      sandbox.releaseHeld();
      const result = await waitFor(
        'run 2 to close',
        async () => {
          const status = (await run2.describe()).status.name;
          return status === 'RUNNING' ? undefined : status;
        },
        60_000,
      );
      // Its outcome and the row, side by side, so a failure says what run 2 met.
      const outcome = await run2.result().then(
        (value: unknown) => ({ status: result, value }),
        (error: unknown) => ({ status: result, failure: failureText(error) }),
      );
      const rowAtEnd = await readMailLog(database.db, orderId);
      expect(outcome, JSON.stringify({ ...outcome, row: rowAtEnd, run2Id })).toMatchObject({
        status: 'COMPLETED',
        value: { result: 'sent', outcome: 'accepted' },
      });

      const messages = sandbox.messagesFor(orderId);
      expect(messages).toHaveLength(1);
      const row = await readMailLog(database.db, orderId);
      expect(row).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        providerMessageId: messages[0]!.id,
      });
      // The open run owns the row: its claim, not the closed run's.
      expect(row?.claimToken.endsWith(`/${run2Id}`)).toBe(true);
      expect(
        (await client.workflow.getHandle(orderId, run1.firstExecutionRunId).describe()).status.name,
      ).toBe('TERMINATED');
    } finally {
      pgProxy.release();
      sandbox.releaseHeld();
      ahead.kill('SIGKILL');
      behind?.kill('SIGKILL');
      await Promise.all([ahead.exited, behind?.exited]);
      // libfaketime removes its per-process files on a clean exit only; these were SIGKILLed.
      for (const pid of [ahead.child.pid, behind?.child.pid]) {
        if (pid === undefined) continue;
        rmSync(`/dev/shm/sem.faketime_sem_${pid}`, { force: true });
        rmSync(`/dev/shm/faketime_shm_${pid}`, { force: true });
      }
      await pgProxy.close();
      await temporalProxy.close();
      await sandbox.close();
    }
  }, 240_000);
});

function failureText(error: unknown): string {
  const parts: string[] = [];
  for (let cause = error; cause instanceof Error; cause = (cause as Error & { cause?: unknown }).cause) {
    parts.push(`${cause.name}: ${cause.message}`);
  }
  return parts.join(' <- ');
}

/** How far ahead of ours a Node process started with its clock shifted by `offset` reads the time, in ms. */
function skewOf(offset: string): number {
  const before = Date.now();
  const theirs = Number(
    execFileSync(process.execPath, ['-e', 'process.stdout.write(String(Date.now()))'], {
      env: { ...process.env, ...clockShiftedBy(offset) },
      encoding: 'utf8',
      timeout: 20_000,
    }),
  );
  return theirs - (before + Date.now()) / 2;
}

/**
 * The environment that runs a process with its wall clock moved by `offset`: libfaketime preloaded, not the
 * `faketime` wrapper. The wrapper names a POSIX semaphore and a shared-memory segment after its own pid and
 * removes them only when it exits cleanly; the SIGKILLs of these tests left them in /dev/shm, and once pids
 * wrapped a new wrapper met its predecessor's semaphore and refused to start ("sem_open: File exists": CI
 * failed so). Preloaded, the library reads FAKETIME and keeps nothing outside the process.
 */
function clockShiftedBy(offset: string): Record<string, string> {
  return {
    LD_PRELOAD: libfaketimeOrFail(),
    FAKETIME: offset,
    // Timers and timeouts run on the monotonic clock, which stays true; only the wall clock is moved.
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

function libfaketimeOrFail(): string {
  const candidates = [
    ...readdirSync('/usr/lib', { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join('/usr/lib', entry.name, 'faketime', 'libfaketime.so.1')),
    '/usr/lib/faketime/libfaketime.so.1',
  ];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found === undefined) {
    throw new Error(
      'libfaketime is missing: bash scripts/setup.sh --browser installs it (Debian package libfaketime)',
    );
  }
  return found;
}

/** Claim local activities the worker has finished, whatever their outcome (the SDK's own metric). */
async function localClaimsFinished(metricsPort: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
    signal: AbortSignal.timeout(5_000),
  });
  const text = await response.text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (
      /^temporal_local_activity_execution_latency\w*_count\{/.test(line) &&
      line.includes('activity_type="claimOrderMail"')
    ) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

function temporalCli(args: string[]): Promise<string> {
  const cli = findTemporalCli();
  if (cli === null) throw new Error('the temporal CLI is missing: bash scripts/setup.sh installs it');
  return new Promise((resolve, reject) =>
    execFile(
      cli,
      [
        ...args,
        '--address',
        inject('temporalAddress'),
        '--namespace',
        inject('temporalNamespace'),
        '--command-timeout',
        '20s',
      ],
      { timeout: 30_000, encoding: 'utf8' },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
}
