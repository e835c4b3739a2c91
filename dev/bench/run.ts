// `npm run bench`: the cost of exactly-once, measured in one run against Temporal's own floor (the same
// workflow shape with no-op activities) and against the plain loop (the same SQL and HTTP, no Temporal).
// Every headline figure is a ratio of two things measured here, on the same servers, minutes apart.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createSandboxControlClient } from '../../packages/sandbox/src/sandboxControlClient';
import { startBenchEnvironment, SANDBOX_API_KEY } from './environment';
import { loadAverage, machineFacts } from './machine';
import { parseBenchOptions, type BenchOptions, type ServerName, type VariantName } from './options';
import { runClosedPhase, runOpenPhase, type PhaseContext, type PhaseResult } from './phases';
import { SEGMENTS } from './latencySegments';
import { renderLatencyChart } from './report/chart';
import { halfCardKnee, headlineRatios, kneesOf, medianThroughput } from './report/headlines';
import { upgradeReport, type BenchReport } from './report/benchReport';
import { renderMarkdown } from './report/markdown';
import { renderTables } from './report/table';
import { inRoundOrder } from './roundOrder';
import { cardVariant, floorVariant, plainVariant, productVariant, type Variant } from './variants';
import { measureCostRows, type CostRow } from './cost/costRows';
import { ACTION_LIST_PRICE } from './cost/pricing';
import { insertBenchOrders } from './orders';
import { PlainProcessPool, TemporalWorkerPool } from './workerPools';
import {
  prepareReleaseCheckout,
  prepareReleaseDatabase,
  RELEASE_20_COMMIT,
  type ReleaseDatabase,
} from './release/release20';
import { bundleWithoutUpserts } from './switches/bundle';
import { SWITCHES, SWITCH_VARIANTS, type SwitchVariant } from './switches/skips';

const isSwitchVariant = (name: VariantName): name is SwitchVariant =>
  (SWITCH_VARIANTS as readonly string[]).includes(name);

// The open-loop sweep compares these; the empty workflow is a reference point for the closed loop only.
const OPEN_LOOP_VARIANTS: VariantName[] = [
  'floor',
  'floor-local',
  'card',
  'product',
  'plain',
  ...SWITCH_VARIANTS,
];

async function main(): Promise<number> {
  // Ctrl-C or a CI timeout: exit through process.exit, whose 'exit' handlers stop every child we started
  // (workers, sandbox, dev server, Postgres) instead of leaving them running.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}, stopping everything it started\n`);
      process.exit(130);
    });
  }
  const options = parseBenchOptions(process.argv.slice(2));
  if (options.fromJson !== null) {
    // Knees and ratios are computed again, so a report reads the same as a fresh run of this version.
    const earlier = upgradeReport(JSON.parse(readFileSync(options.fromJson, 'utf8')));
    earlier.knees = kneesOf(earlier.phases);
    earlier.ratios = headlineRatios(earlier.phases, earlier.floorSaturationPerSecond);
    await writeReport(earlier, { ...options, jsonPath: options.jsonPath });
    return earlier.problems.length === 0 ? 0 : 1;
  }
  const machine = machineFacts();
  const began = performance.now();
  const log = (message: string): void => {
    const seconds = ((performance.now() - began) / 1000).toFixed(0).padStart(4);
    process.stderr.write(`[bench ${seconds}s] ${message}\n`);
  };
  log(
    `${machine.cpuModel}, ${machine.cores} cores, Node ${machine.nodeVersion}, load average ${machine.loadAverageAtStart.join(' ')}`,
  );

  const environment = await startBenchEnvironment({
    devServerDbFile: options.devServerDbFile,
    servers: options.servers,
  });
  log(
    `servers up (${environment.servers.map((server) => server.name).join(', ')}); logs in ${environment.logDirectory}`,
  );
  const sandbox = createSandboxControlClient(environment.sandboxUrl, { timeoutMs: 120_000 });
  const runTag = randomBytes(4).toString('hex');
  const mailEnv = {
    DATABASE_URL: environment.databaseUrl,
    MAIL_API_BASE_URL: environment.sandboxUrl,
    MAIL_API_KEY: SANDBOX_API_KEY,
    // One name for every variant's send keys; each server's namespace records it for its own.
    MAIL_DEPLOYMENT_ID: 'bench',
    // The sandbox indexes a message 1 s after it took it; the generic API's documented 30 s settle delay is
    // for a real gateway, and would only make the unknown path's cost run (and CI's smoke) wait. The Actions
    // counted do not depend on it.
    MAIL_VERIFY_SETTLE_DELAY_MS: '3000',
    MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'the bench sandbox indexes within 1 s',
  };

  // Built once, for product-noattrs on every server.
  let bundle: Promise<string> | null = null;
  const noUpsertsBundle = (): Promise<string> =>
    (bundle ??= bundleWithoutUpserts(path.join(environment.logDirectory, 'workflows-without-upserts.js')));

  // 2.0.0's worker runs from its own checkout on a database its own migrator made (dev/bench/release).
  let release: { directory: string; database: ReleaseDatabase } | null = null;
  if (options.variants.includes('release-2.0')) {
    try {
      const checkout = prepareReleaseCheckout(log);
      const database = await prepareReleaseDatabase(
        checkout,
        environment.adminUrl,
        environment.productionLogins,
        log,
      );
      release = { directory: checkout.directory, database };
      log(`release-2.0: ${checkout.commit.slice(0, 7)}, dependencies ${checkout.dependencies}`);
    } catch (error) {
      await environment.close();
      throw error;
    }
  }

  // One client and one pool of each kind of Temporal worker per server; the plain loop needs no server.
  const perServer = [];
  for (const server of environment.servers) {
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection, namespace: server.namespace });
    const temporalEnv = { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace };
    const floorQueue = `bench-floor-${server.name}-${runTag}`;
    const productQueue = `bench-product-${server.name}-${runTag}`;
    const cardQueue = `bench-card-${server.name}-${runTag}`;
    const floorPool = new TemporalWorkerPool(
      `floor-${server.name}`,
      'dev/bench/floor/worker.ts',
      { ...temporalEnv, TEMPORAL_TASK_QUEUE: floorQueue, ...options.floorEnv },
      environment.logDirectory,
    );
    const productPool = new TemporalWorkerPool(
      `product-${server.name}`,
      'src/worker.ts',
      { ...temporalEnv, ...mailEnv, TEMPORAL_TASK_QUEUE: productQueue, ...options.productEnv },
      environment.logDirectory,
    );
    // The product's environment, so the card has the product's settings (pool, timeouts, transport).
    const cardPool = new TemporalWorkerPool(
      `card-${server.name}`,
      'dev/bench/card/worker.ts',
      { ...temporalEnv, ...mailEnv, TEMPORAL_TASK_QUEUE: cardQueue, ...options.productEnv },
      environment.logDirectory,
    );
    // The product with one extra left out each: src/worker.ts behind the switches' preload, a queue each.
    const switchPools = new Map<SwitchVariant, { pool: TemporalWorkerPool; queue: string }>();
    for (const name of options.variants.filter(isSwitchVariant)) {
      const queue = `bench-${name}-${server.name}-${runTag}`;
      const value = name === 'product-noattrs' ? await noUpsertsBundle() : '1';
      const pool = new TemporalWorkerPool(
        `${name}-${server.name}`,
        'src/worker.ts',
        {
          ...temporalEnv,
          ...mailEnv,
          TEMPORAL_TASK_QUEUE: queue,
          ...options.productEnv,
          [SWITCHES[name]]: value,
        },
        environment.logDirectory,
        { preload: 'dev/bench/switches/preload.ts' },
      );
      switchPools.set(name, { pool, queue });
    }
    // The product's settings and sandbox; its own queue and database. Only variables 2.0 reads matter to it.
    const releaseQueue = `bench-release-2.0-${server.name}-${runTag}`;
    const releasePool =
      release === null
        ? null
        : new TemporalWorkerPool(
            `release-2.0-${server.name}`,
            'src/worker.ts',
            {
              ...temporalEnv,
              ...mailEnv,
              TEMPORAL_TASK_QUEUE: releaseQueue,
              ...options.productEnv,
              DATABASE_URL: release.database.workerUrl,
            },
            environment.logDirectory,
            { cwd: release.directory },
          );
    const variants: Variant[] = options.variants
      .filter((name) => name !== 'plain')
      .map((name) => {
        const workflowIdPrefix = `bench-${runTag}-${server.name}-${name}-`;
        if (name === 'product')
          return productVariant(server, client, productPool, productQueue, environment.db, sandbox);
        if (isSwitchVariant(name)) {
          const { pool, queue } = switchPools.get(name)!;
          return productVariant(server, client, pool, queue, environment.db, sandbox, name);
        }
        if (name === 'card')
          return cardVariant(server, client, cardPool, cardQueue, workflowIdPrefix, environment.db, sandbox);
        if (name === 'release-2.0') {
          // 2.0's start is the product's: same workflow type, order id as workflow id and argument, same
          // reuse policy and attributes at start (2.0's src/client.ts).
          const { db, commits } = release!.database;
          return productVariant(server, client, releasePool!, releaseQueue, db, sandbox, name, {
            db,
            commits,
          });
        }
        return floorVariant(name, server, client, floorPool, floorQueue, workflowIdPrefix);
      });
    perServer.push({
      server,
      connection,
      client,
      floorQueue,
      productQueue,
      floorPool,
      productPool,
      cardPool,
      // The switch variants' pools and release-2.0's.
      extraPools: [
        ...[...switchPools.values()].map((entry) => entry.pool),
        ...(releasePool === null ? [] : [releasePool]),
      ],
      variants,
    });
  }
  const plainPool = new PlainProcessPool({ ...mailEnv, ...options.plainEnv }, environment.logDirectory);
  const plain = options.variants.includes('plain')
    ? plainVariant(plainPool, environment.db, sandbox, options.concurrency)
    : null;

  let syntheticCounter = 0;
  const context: PhaseContext = {
    db: environment.db,
    shared: { postgres: environment.pids.postgres, sandbox: environment.pids.sandbox },
    commits: environment.commits,
    syntheticIds: (count) => Array.from({ length: count }, () => String(++syntheticCounter)),
    log,
  };

  const phases: PhaseResult[] = [];
  const costs: CostRow[] = [];
  const floorSaturation: Partial<Record<ServerName, number | null>> = {};
  const describePhase = (phase: PhaseResult): string =>
    `${phase.variant}${phase.server === null ? '' : `@${phase.server}`} ${phase.mode}` +
    `${phase.offeredPerSecond === null ? '' : ` @${phase.offeredPerSecond.toFixed(1)}/s`} ` +
    `x${phase.workers}: ${phase.throughputPerSecond.toFixed(1)}/s, p50 ${phase.latency.p50Ms.toFixed(0)} ms, ` +
    `p99 ${phase.latency.p99Ms.toFixed(0)} ms, worker ${phase.cores.workers.toFixed(2)} cores, ` +
    `server ${phase.cores.temporalServer?.toFixed(2) ?? '-'} cores, machine ${phase.cores.machine?.toFixed(2) ?? '-'} cores` +
    (phase.startLag === undefined
      ? ''
      : `, starts p50/p99 ${phase.startLag.p50Ms.toFixed(0)}/${phase.startLag.p99Ms.toFixed(0)} ms after due`) +
    (phase.keptUp === false ? ', NOT SUSTAINED' : '') +
    (phase.segments === undefined
      ? ''
      : `, segments p50 ${SEGMENTS.map((segment) => phase.segments!.p50Ms[segment].toFixed(0)).join('/')} ms (${SEGMENTS.join('/')})`) +
    (phase.problems.length > 0 ? `  PROBLEMS: ${phase.problems.join('; ')}` : '');
  const runClosed = async (variant: Variant, workers: number, round: number, rounds: number) => {
    log(
      `closed loop: ${variant.description}${variant.server === null ? '' : ` on ${variant.server.name}`}, ` +
        `${workers} worker(s), concurrency ${options.concurrency}` +
        (rounds > 1 ? `, round ${round}/${rounds}` : ''),
    );
    const phase = await runClosedPhase(
      context,
      variant,
      workers,
      options.concurrency,
      options.warmupSeconds,
      options.durationSeconds,
      round,
    );
    phases.push(phase);
    log(describePhase(phase));
  };

  try {
    for (const [index, workers] of options.workerCounts.entries()) {
      // Worker counts above 1 show where the CPU goes; on the first server only unless asked (time).
      const servers = index === 0 || options.scaleAllServers ? perServer : perServer.slice(0, 1);
      log(`starting workers: ${workers} per variant`);
      // The floor variants share one pool; scaleTo is a no-op for a pool that is already that big.
      await Promise.all([
        ...servers.flatMap((entry) => entry.variants.map((variant) => variant.scaleTo(workers))),
        ...(plain === null ? [] : [plain.scaleTo(workers)]),
      ]);
      if (index === 0) {
        // What one order costs, per path, from its recorded history: before anything is measured.
        for (const entry of servers) {
          const hasProduct = options.variants.includes('product');
          const hasFloor = options.variants.some((name) => name === 'floor' || name === 'floor-local');
          log(`cost per order on ${entry.server.name}: one order per path, histories counted`);
          const rows = await measureCostRows({
            server: entry.server.name,
            paths: options.costPaths,
            product: hasProduct
              ? {
                  client: entry.client,
                  taskQueue: entry.productQueue,
                  db: environment.db,
                  createOrder: async () => (await insertBenchOrders(environment.db, 1))[0]!,
                  queueFault: (orderId, fault) => sandbox.queueFault(orderId, fault),
                  // The product's workers run the defaults: the generic API is asked about unknown outcomes.
                  verifies: true,
                }
              : null,
            floor: hasFloor
              ? {
                  client: entry.client,
                  taskQueue: entry.floorQueue,
                  workflowIdPrefix: `bench-${runTag}-${entry.server.name}-`,
                }
              : null,
          });
          costs.push(...rows);
          for (const row of rows) {
            log(
              `  ${row.variant} ${row.path}: ${row.events} events, ${row.actions} Actions ${JSON.stringify(row.actionsByRule)}`,
            );
          }
        }
        await sandbox.reset();
      }
      // Interleaved rounds with one worker: each ratio is taken between phases minutes apart at most, and the
      // median over rounds damps what other processes on the machine did meanwhile. Even rounds run the variants
      // in reverse, so a server that slows as its history grows does not always favour the first one.
      const rounds = index === 0 ? options.rounds : 1;
      for (let round = 1; round <= rounds; round++) {
        for (const entry of servers) {
          for (const variant of inRoundOrder(entry.variants, round)) {
            if (variant.name === 'empty' && index > 0) continue;
            await runClosed(variant, workers, round, rounds);
          }
        }
        if (plain !== null) await runClosed(plain, workers, round, rounds);
      }
      if (index > 0) continue;

      for (const entry of servers) {
        const floor = medianThroughput(phases, 'floor', workers, entry.server.name);
        floorSaturation[entry.server.name] = floor;
        // Without the floor, the sweep's fractions are of the card's saturation (its knee is what they find).
        const saturation = floor ?? medianThroughput(phases, 'card', workers, entry.server.name);
        const rates =
          options.openLoopRates ??
          (saturation === null ? [] : options.openLoopFractions.map((fraction) => fraction * saturation));
        const open = [
          ...entry.variants.filter((candidate) => OPEN_LOOP_VARIANTS.includes(candidate.name)),
          // The plain loop runs at the first server's rates: it has no server of its own.
          ...(plain !== null && entry === perServer[0] ? [plain] : []),
        ];
        for (const rate of rates) {
          for (const variant of open) {
            log(
              `open loop: ${variant.name}${variant.server === null ? '' : `@${variant.server.name}`} at ${rate.toFixed(1)}/s for ${options.openLoopSeconds} s`,
            );
            const phase = await runOpenPhase(context, variant, workers, rate, options.openLoopSeconds);
            phases.push(phase);
            log(describePhase(phase));
          }
        }
        // Latency paired per round at half the card's knee: card, product and the switch variants in turn.
        const halfKnee = halfCardKnee(phases, entry.server.name);
        const paired = entry.variants.filter(
          (variant) => variant.name === 'card' || variant.name === 'product' || isSwitchVariant(variant.name),
        );
        if (options.latencyOrders > 0 && halfKnee !== null) {
          for (let round = 1; round <= options.rounds; round++) {
            for (const variant of inRoundOrder(paired, round)) {
              log(
                `latency: ${variant.name}@${entry.server.name} at ${halfKnee.toFixed(1)}/s, ${options.latencyOrders} orders, round ${round}/${options.rounds}`,
              );
              const seconds = options.latencyOrders / halfKnee;
              const phase = await runOpenPhase(context, variant, workers, halfKnee, seconds, round);
              phases.push(phase);
              log(describePhase(phase));
            }
          }
        }
      }
    }
  } finally {
    await Promise.allSettled([
      ...perServer.flatMap((entry) => [
        entry.floorPool.close(),
        entry.productPool.close(),
        entry.cardPool.close(),
        ...entry.extraPools.map((pool) => pool.close()),
      ]),
      plainPool.close(),
    ]);
    await sandbox.close().catch(() => undefined);
    for (const entry of perServer) await entry.connection.close().catch(() => undefined);
    await release?.database.close().catch(() => undefined);
    await environment.close();
  }

  machine.loadAverageAtEnd = loadAverage();
  const problems = [...costs.flatMap((row) => row.problems), ...phases.flatMap((phase) => phase.problems)];
  for (const variant of options.variants) {
    if (!phases.some((phase) => phase.variant === variant && phase.orders > 0)) {
      problems.push(`${variant}: no order completed in any phase`);
    }
  }
  const report: BenchReport = {
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    environment: {
      temporal: environment.servers.map((server) => `${server.name}: ${server.describe}`).join('; '),
      postgres: environment.describe.postgres,
      mailApi: 'mail sandbox (packages/sandbox) in its own process, pass-through (no faults), loopback HTTP',
      productWorker: 'node --import tsx src/worker.ts, one OS process per worker',
      ...(release === null
        ? {}
        : {
            releaseWorker: `release-2.0: node --import tsx src/worker.ts in ${path.relative(process.cwd(), release.directory)} (2.0.0, ${RELEASE_20_COMMIT}), its own database migrated by its own db:migrate`,
          }),
    },
    options,
    floorSaturationPerSecond: floorSaturation,
    costs,
    actionPrice: ACTION_LIST_PRICE,
    phases,
    knees: kneesOf(phases),
    ratios: headlineRatios(phases, floorSaturation),
    problems,
  };
  await writeReport(report, options);
  log(`done in ${((performance.now() - began) / 1000).toFixed(0)} s`);
  return problems.length === 0 ? 0 : 1;
}

async function writeReport(report: BenchReport, options: BenchOptions): Promise<void> {
  const { machine } = report;
  console.log(renderTables(report));
  if (options.jsonPath !== null) writeFileSync(options.jsonPath, JSON.stringify(report, null, 2) + '\n');
  if (options.markdownPath !== null) writeFileSync(options.markdownPath, renderMarkdown(report));
  if (options.svgPath !== null) {
    const subtitle = `${machine.cpuModel}, ${machine.cores} cores, load average ${machine.loadAverageAtStart[0]}; ${machine.date.slice(0, 10)}`;
    writeFileSync(options.svgPath, await renderLatencyChart(report.phases, subtitle));
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
