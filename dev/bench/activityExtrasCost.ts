// `node --import tsx dev/bench/activityExtrasCost.ts [--calls 20000]`: what the product's activities do per
// order beyond the card's, each timed alone in one process (CPU µs per call, this thread): the documented log
// lines through the SDK's activity logger and the worker's JSON logger, the metrics, the send's deadline race
// around each step before the fence, the mail's limits, the claim's per-call reading of its dependencies and
// the tracker of unrecorded sends. The card runs the same activity machinery otherwise (the SDK's Activity,
// its context and abort signal), so those are not listed.
import { parseArgs } from 'node:util';
import { log } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { providerNamesOf, verifiersOf, type ActivityDependencies } from '../../src/activities/dependencies';
import { renderedBytes } from '../../src/mail/mailSizeLimits';
import { recipientAddressProblem } from '../../src/mail/recipientAddress';
import { createOrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import { getFreePort } from '../../src/shared/freePort';
import { UnrecordedSendTracker } from '../../src/unrecordedSendTracker';
import { jsonLogger } from '../../src/workerLog';
import type { OrderMailActivities } from '../../src/activities';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '20000' } } });
  const calls = Number(values.calls);
  let written = 0;
  // As src/workerRuntime.ts installs it, the lines counted instead of written to stdout.
  const logger = jsonLogger((line) => (written += line.length), 'INFO');
  // With the Prometheus exporter on, as a deployed worker has it (WORKER_HTTP_BIND_ADDRESS).
  Runtime.install({
    logger,
    shutdownSignals: [],
    telemetryOptions: {
      metrics: { prometheus: { bindAddress: `127.0.0.1:${await getFreePort('127.0.0.1')}` } },
    },
  });
  const metrics = createOrderMailMetrics(Runtime.instance().metricMeter, { provider: 'generic' });
  const environment = new MockActivityEnvironment(
    { activityType: 'sendOrderMail', workflowType: 'orderConfirmationMail' },
    { logger },
  );

  const results: [string, number][] = [];
  const time = async (what: string, work: () => unknown) => {
    for (let i = 0; i < calls / 10; i++) await work(); // warm-up
    const before = process.threadCpuUsage();
    for (let i = 0; i < calls; i++) await work();
    const used = process.threadCpuUsage(before);
    results.push([what, (used.user + used.system) / calls]);
  };

  await time('an activity run, nothing in it (both)', () => environment.run(() => Promise.resolve()));
  await time('an activity run with one documented line (INFO)', () =>
    environment.run(() => {
      log.info('Order mail send finished', {
        orderId: '5721276895001',
        attempt: 1,
        outcome: 'accepted',
        httpStatus: 202,
        dispatched: true,
        provider: 'generic',
      });
      return Promise.resolve();
    }),
  );
  await time('an activity run with one DEBUG entry (dropped)', () =>
    environment.run(() => {
      log.debug('Order mail send finished', { orderId: '5721276895001', attempt: 1 });
      return Promise.resolve();
    }),
  );
  await time('the send metrics (sends counter, duration histogram)', () =>
    metrics.sendFinished('accepted', 0.012, 'generic'),
  );
  await time('the claim metric (provider chosen)', () => metrics.providerChosen('generic', 'first'));
  await time('a step raced against the fence deadline (timer, race, clear)', async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.resolve(1),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('too late')), 5_000);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  });
  await time('the same step awaited alone', async () => await Promise.resolve(1));
  const mail = {
    subject: 'ご注文ありがとうございます',
    text: 'x'.repeat(1_500),
    html: '<p>x</p>'.repeat(300),
  };
  await time("the mail's limits (recipient address, rendered bytes)", () => [
    recipientAddressProblem('customer@example.com'),
    renderedBytes(mail),
  ]);
  const deps = {
    mail: { destination: { provider: 'generic' } },
    providerSettings: new Map([['generic', { idempotency: null, verification: null }]]),
  } as unknown as ActivityDependencies;
  await time("the claim's reading of its dependencies (providers, verifiers, judgements)", () => {
    const verifiable = new Set(verifiersOf(deps).map((verifier) => verifier.destination.provider));
    const judgements = new Map<string, unknown>();
    for (const [provider, settings] of deps.providerSettings ?? [])
      judgements.set(provider, { idempotency: settings.idempotency, canVerify: verifiable.has(provider) });
    return [providerNamesOf(deps), judgements];
  });
  const tracker = new UnrecordedSendTracker();
  const answer = Promise.resolve();
  const tracked = tracker.track({
    sendOrderMail: () => answer,
    recordOrderMailOutcome: () => answer,
  } as unknown as OrderMailActivities);
  const send = { orderId: '5721276895001', claimToken: 'default/5721276895001/run', attempt: 1 };
  await time('the tracker of unrecorded sends (send and record wrapped)', async () => {
    await tracked.sendOrderMail({ ...send, idempotencyKey: 'key' });
    await tracked.recordOrderMailOutcome(
      send as Parameters<OrderMailActivities['recordOrderMailOutcome']>[0],
    );
  });

  console.log(`CPU µs per call, ${calls} calls each (${written} bytes of log lines made):`);
  for (const [what, micros] of results) console.log(`  ${micros.toFixed(2).padStart(8)}  ${what}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
