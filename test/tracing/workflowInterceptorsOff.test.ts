// With tracing off, a worker that bundles its workflows at start-up leaves the OpenTelemetry workflow
// interceptors out of the bundle: in the sandbox they would open, end and drop spans for every workflow and
// activity, the largest share of the worker's CPU per order (docs/benchmarks.md). With tracing on they are in.
// A prebuilt bundle (the image's) comes with a twin without them, which a worker with tracing off runs.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { NativeConnection } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import type { Tracing } from '../../src/tracing/tracing';
import {
  untracedBundlePathOf,
  WORKFLOW_INTERCEPTOR_MODULES,
} from '../../src/tracing/workflowInterceptorModules';
import { orderMailWorkerPair, prebuiltBundleToRun, type OrderMailWorkerSetup } from '../../src/workerOptions';
import { testSettings } from '../support/testKit';

function setup(tracing: Tracing | null): OrderMailWorkerSetup {
  // Nothing here connects: the options are only built, never run.
  const dependencies = {
    db: {} as ActivityDependencies['db'],
    mail: {} as ActivityDependencies['mail'],
    settings: testSettings(),
    workerIdentity: 'options-test',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  } satisfies ActivityDependencies;
  return {
    connection: {} as NativeConnection,
    namespace: 'default',
    taskQueue: 'options-test',
    dependencies,
    workflows: { workflowsPath: path.join(__dirname, '../../src/workflows/index.ts') },
    shutdownGraceTimeMs: 1_000,
    maxConcurrentActivityTaskExecutions: 10,
    tracing,
  };
}

const tracingOn: Tracing = {
  workerInterceptors: {},
  workflowSpanSinks: { exporter: { export: { fn: () => undefined } } },
  clientInterceptors: {},
  shutdown: async () => undefined,
};

describe('workflow interceptors in a bundle made at start-up', () => {
  it('are left out when tracing is off', () => {
    const { workflowWorker } = orderMailWorkerPair(setup(null));
    expect(workflowWorker.workflowsPath).toBeDefined();
    expect(workflowWorker.interceptors?.workflowModules ?? []).toEqual([]);
  });

  it('are bundled when tracing is on', () => {
    const { workflowWorker } = orderMailWorkerPair(setup(tracingOn));
    expect(workflowWorker.interceptors?.workflowModules).toEqual(WORKFLOW_INTERCEPTOR_MODULES);
    expect(workflowWorker.sinks).toBe(tracingOn.workflowSpanSinks);
  });
});

describe('a prebuilt bundle', () => {
  it('is written with its twin without the interceptors, which a worker with tracing off runs', async () => {
    const directory = await mkdtemp(path.join(tmpdir(), 'bundle-workflows-'));
    try {
      const traced = path.join(directory, 'workflow-bundle.js');
      // The image's command, from the sources.
      await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'src/cli/bundle-workflows.ts', traced],
        {
          cwd: path.join(__dirname, '../..'),
        },
      );
      const untraced = path.join(directory, 'workflow-bundle-untraced.js');
      expect(existsSync(untraced)).toBe(true);
      expect(untracedBundlePathOf(traced)).toBe(untraced);
      expect(await readFile(traced, 'utf8')).toContain('src/tracing/workflowInterceptors');
      const code = await readFile(untraced, 'utf8');
      expect(code).toContain('src/workflows/orderConfirmationMail');
      expect(code).not.toContain('src/tracing/workflowInterceptors');
      expect(code).not.toContain('@opentelemetry');

      expect(prebuiltBundleToRun(traced, false)).toEqual({ workflowBundle: { codePath: untraced } });
      expect(prebuiltBundleToRun(traced, true)).toEqual({ workflowBundle: { codePath: traced } });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 180_000);

  it('is run as named when it has no twin beside it (one built by hand), whether tracing is on or off', () => {
    const bundle = path.join(tmpdir(), 'no-such-directory', 'workflows.js');
    expect(existsSync(untracedBundlePathOf(bundle))).toBe(false);
    expect(prebuiltBundleToRun(bundle, false)).toEqual({ workflowBundle: { codePath: bundle } });
    expect(prebuiltBundleToRun(bundle, true)).toEqual({ workflowBundle: { codePath: bundle } });
  });
});
