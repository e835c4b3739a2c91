// With tracing off, a worker that bundles its workflows at start-up leaves the OpenTelemetry workflow
// interceptors out of the bundle: in the sandbox they would open, end and drop spans for every workflow and
// activity, the largest share of the worker's CPU per order (docs/benchmarks.md). With tracing on they are in.
import path from 'node:path';
import type { NativeConnection } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import type { Tracing } from '../../src/tracing/tracing';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../../src/tracing/workflowInterceptorModules';
import { orderMailWorkerPair, type OrderMailWorkerSetup } from '../../src/workerOptions';
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
