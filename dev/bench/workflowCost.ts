// `node --import tsx dev/bench/workflowCost.ts [--replays 300] [--rounds 3] [--product-bundle FILE]`: the
// worker's CPU for the workflow side of one accepted order, product against card, side by side in one
// process. Each variant's bundle replays one accepted history again and again (Worker.runReplayHistories:
// every activation of a run, from a new workflow, as a worker without a cached run does it), rounds
// interleaved. The product's history is test/replay/histories/accepted.json; the card's is recorded here on a
// dev server with activities that answer at once. Prints bundle bytes, the modules each bundle adds, and CPU
// per run.
// --product-bundle reads the product's two bundles as `node dist/cli/bundle-workflows.js FILE` writes them (the
// image's: FILE with the tracing interceptors, its untraced twin beside it) instead of bundling them here.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { promiseHooks } from 'node:v8';
import vm from 'node:vm';
import { Client, Connection } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type BundleOptions,
} from '@temporalio/worker';
import { startTemporalDevServer } from '../devtools/devServer';
// The SDK's own classes, timed from outside: what runs inside a workflow's context has no public hook. A
// measurement tool only; the product never imports them.
// eslint-disable-next-line no-restricted-imports
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
// eslint-disable-next-line no-restricted-imports
import { BaseVMWorkflow } from '@temporalio/worker/lib/workflow/vm-shared';
// eslint-disable-next-line no-restricted-imports
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DROPPED_WORKFLOW_SPANS } from '../../src/tracing/tracing';
import {
  untracedBundlePathOf,
  WORKFLOW_INTERCEPTOR_MODULES,
} from '../../src/tracing/workflowInterceptorModules';

const root = path.join(__dirname, '../..');

interface Variant {
  name: string;
  bundle: Omit<BundleOptions, 'logger'>;
  /** A bundle made beforehand, read instead of bundling. */
  prebuilt?: string;
  code?: string;
  history?: { workflowId: string; history: unknown };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      replays: { type: 'string', default: '300' },
      rounds: { type: 'string', default: '3' },
      // Variants whose names start with this only (with the card, always recorded): for a profile of one.
      only: { type: 'string' },
      'product-bundle': { type: 'string' },
    },
  });
  const productBundle = values['product-bundle'];
  const replays = Number(values.replays);
  const rounds = Number(values.rounds);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  timeSandbox();

  const productPath = path.join(root, 'src/workflows/index.ts');
  const variants: Variant[] = [
    { name: 'card', bundle: { workflowsPath: path.join(root, 'dev/bench/card/workflows.ts') } },
    // What src/worker.ts bundles at start-up with tracing off (the bench's product), and the image's bundle
    // for tracing off (src/cli/bundle-workflows.ts): the same code.
    {
      name: 'product untraced',
      bundle: { workflowsPath: productPath },
      prebuilt: productBundle === undefined ? undefined : untracedBundlePathOf(productBundle),
    },
    // The image's bundle with the tracing interceptors, which its workers ran with tracing off too until
    // 2026-12-07; with tracing on, as now.
    {
      name: 'product traced',
      bundle: { workflowsPath: productPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES },
      prebuilt: productBundle,
    },
  ];
  if (values.only !== undefined) {
    const only = values.only;
    variants.splice(
      1,
      variants.length,
      ...variants.slice(1).filter((variant) => variant.name.startsWith(only)),
    );
  }
  for (const variant of variants) {
    const code =
      variant.prebuilt === undefined
        ? (await bundleWorkflowCode({ ...variant.bundle, logger: new DefaultLogger('WARN') })).code
        : await readFile(variant.prebuilt, 'utf8');
    variant.code = code;
    const modules = modulesOf(code);
    const own = modules.filter((name) => !/node_modules\/@temporalio\/(workflow|common)\//.test(name));
    const from = variant.prebuilt === undefined ? '' : ` (${variant.prebuilt})`;
    console.log(`${variant.name}: ${code.length} bytes, ${modules.length} modules${from}; beside the SDK's:`);
    for (const name of own) console.log(`  ${name}`);
  }

  const stored = JSON.parse(
    await readFile(path.join(root, 'test/replay/histories/accepted.json'), 'utf8'),
  ) as { workflowId: string; history: unknown };
  // Read from JSON once, as the card's arrives: else every replay would parse it again.
  const accepted = { workflowId: stored.workflowId, history: historyFromJSON(stored.history) };
  const card = await recordCardHistory(variants[0]!.code!);
  for (const variant of variants) variant.history = variant.name === 'card' ? card : accepted;

  const cpu = new Map<string, { thread: number[]; sandbox: number[] }>(
    variants.map((variant) => [variant.name, { thread: [], sandbox: [] }]),
  );
  const counts = new Map<string, { vmCalls: number; promises: number; activations: number }>();
  for (let round = 0; round < rounds; round++) {
    // Each variant goes first as often as the rounds allow.
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const variant of order) {
      const { history } = variant.history!;
      const histories = Array.from({ length: replays }, (_, i) => ({ workflowId: `replay-${i}`, history }));
      const sandboxBefore = { ...sandboxCpu };
      const before = process.threadCpuUsage();
      for await (const result of Worker.runReplayHistories(
        // With tracing off, the prebuilt bundle's spans are dropped by this sink (src/tracing/tracing.ts).
        { workflowBundle: { code: variant.code! }, replayName: variant.name, sinks: DROPPED_WORKFLOW_SPANS },
        histories,
      )) {
        if (result.error !== undefined) throw result.error;
      }
      const used = process.threadCpuUsage(before);
      cpu.get(variant.name)!.thread.push((used.user + used.system) / replays);
      cpu.get(variant.name)!.sandbox.push((sandboxCpu.micros - sandboxBefore.micros) / replays);
      counts.set(variant.name, {
        vmCalls: (sandboxCpu.vmCalls - sandboxBefore.vmCalls) / replays,
        promises: (sandboxCpu.promises - sandboxBefore.promises) / replays,
        activations: (sandboxCpu.activations - sandboxBefore.activations) / replays,
      });
    }
  }
  const cardCpu = cpu.get('card')!;
  console.log(`\nCPU per replayed run (µs, the main thread), ${replays} runs a round, ${rounds} rounds`);
  for (const [name, { thread, sandbox }] of cpu) {
    console.log(
      `${name}: main thread ${describe(thread, cardCpu.thread)}; in the workflow sandbox ${describe(sandbox, cardCpu.sandbox)}`,
    );
    const { vmCalls, promises, activations } = counts.get(name)!;
    const perActivation = median(sandbox) / activations;
    console.log(
      `  per run: ${activations} activations (${perActivation.toFixed(0)} µs each in the sandbox), ` +
        `${vmCalls} calls into the sandbox, ${promises} promises made in it`,
    );
  }
}

function describe(values: number[], card: number[]): string {
  const mid = median(values);
  const list = values.map((value) => value.toFixed(0)).join(', ');
  return `${mid.toFixed(0)} [${list}] (/ card ${(mid / median(card)).toFixed(2)})`;
}

/**
 * CPU of the main thread inside the workflow sandbox: making a run (its modules evaluated) and each activation,
 * its sink calls included. The replay runs one activation at a time, so nothing else runs meanwhile.
 */
const sandboxCpu = { micros: 0, vmCalls: 0, promises: 0, activations: 0 };
function timeSandbox(): void {
  // What the SDK pays per call into a workflow's context (a watchdog thread) and per promise made in one (its
  // stack, through the bundle's source map): counted, since they explain the CPU when the machine is loaded.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const runInContext = vm.Script.prototype.runInContext;
  vm.Script.prototype.runInContext = function (this: vm.Script, ...args): unknown {
    sandboxCpu.vmCalls++;
    return runInContext.apply(this, args) as unknown;
  };
  promiseHooks.createHook({
    init(promise) {
      if (promise.constructor !== Promise) sandboxCpu.promises++;
    },
  });
  const timed = <T extends object>(prototype: T, name: keyof T) => {
    const original = prototype[name] as (...args: unknown[]) => Promise<unknown>;
    prototype[name] = async function (this: unknown, ...args: unknown[]) {
      const before = process.threadCpuUsage();
      try {
        return await original.apply(this, args);
      } finally {
        const used = process.threadCpuUsage(before);
        sandboxCpu.micros += used.user + used.system;
      }
    } as T[keyof T];
  };
  timed(ReusableVMWorkflowCreator.prototype, 'createWorkflow');
  timed(BaseVMWorkflow.prototype, 'activate');
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const activate = BaseVMWorkflow.prototype.activate;
  BaseVMWorkflow.prototype.activate = function (this: BaseVMWorkflow, ...args) {
    sandboxCpu.activations++;
    return activate.apply(this, args);
  };
  timed(BaseVMWorkflow.prototype, 'getAndResetSinkCalls');
}

/** Module names of a development-mode webpack bundle. */
function modulesOf(code: string): string[] {
  return [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"$/gm)].map((match) => match[1]!);
}

/**
 * One accepted run of the card's workflow, with activities that answer at once, on the Temporal of
 * TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) when set, else on a dev server of its own.
 */
async function recordCardHistory(code: string): Promise<Variant['history']> {
  const given = process.env.TEMPORAL_ADDRESS;
  const server = given === undefined || given === '' ? await startTemporalDevServer({ uiPort: null }) : null;
  const address = server?.address ?? given!;
  const namespace = server?.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default';
  try {
    const connection = await Connection.connect({ address });
    const native = await NativeConnection.connect({ address });
    const taskQueue = `workflow-cost-card-${process.pid}`;
    const worker = await Worker.create({
      connection: native,
      namespace,
      taskQueue,
      workflowBundle: { code },
      activities: {
        claimCardMail: () =>
          Promise.resolve({ kind: 'claimed', attempt: 1, claimToken: 'card/w/r', sendTimeoutMs: 8_000 }),
        sendCardMail: () =>
          Promise.resolve({ outcome: 'accepted', httpStatus: 202, providerMessageId: 'message-1' }),
        recordCardMail: () => Promise.resolve({ recorded: true }),
      },
    });
    const client = new Client({ connection, namespace });
    const workflowId = `workflow-cost-card-${process.pid}-${Date.now()}`;
    const history = await worker.runUntil(async () => {
      const handle = await client.workflow.start('benchCardMail', { taskQueue, workflowId, args: ['1'] });
      await handle.result();
      return handle.fetchHistory();
    });
    await native.close();
    await connection.close();
    return { workflowId, history };
  } finally {
    await server?.stop();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
