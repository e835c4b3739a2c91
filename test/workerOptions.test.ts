// The process's workers as src/workerPair.ts creates them: lookups on a queue and slots of their own, outside
// the send rate limit, under the same Worker Deployment Version (docs/design.md §6, "Lookup slots"). Options
// only, nothing runs; test/workflows/lookupSlots.test.ts runs them.
import path from 'node:path';
import type { NativeConnection } from '@temporalio/worker';
import { expect, it } from 'vitest';
import type { ActivityDependencies } from '../src/activities';
import type { OrderMailWorkflowSettings } from '../src/shared/workflowSettings';
import {
  lookupTaskQueueOf,
  orderMailWorkerPair,
  withLookupsOn,
  type OrderMailWorkerSetup,
} from '../src/workerOptions';
import { testSettings } from './support/testKit';

const VERIFY = { settleDelayMs: 1_000, lookupTimeoutMs: 800, deadlineMs: 4_000 };

function setup(providerSettings?: ReadonlyMap<string, OrderMailWorkflowSettings>): OrderMailWorkerSetup {
  // Nothing here connects: the options are only built, never run.
  const dependencies = {
    db: {} as ActivityDependencies['db'],
    mail: {} as ActivityDependencies['mail'],
    settings: testSettings({ verification: VERIFY }),
    workerIdentity: 'options-test',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
    ...(providerSettings === undefined ? {} : { providerSettings }),
  } satisfies ActivityDependencies;
  return {
    connection: {} as NativeConnection,
    namespace: 'default',
    taskQueue: 'mail-eu',
    dependencies,
    workflows: { workflowsPath: path.join(__dirname, '../src/workflows/index.ts') },
    shutdownGraceTimeMs: 70_000,
    maxConcurrentActivityTaskExecutions: 100,
    maxConcurrentLookups: 7,
    sendRateLimitPerSecond: 5,
    deployment: { deploymentName: 'order-mail', buildId: '2.5.0' },
  };
}

it('the lookup worker polls a queue of its own with its own slots, verify only, and no send rate limit', () => {
  const { activityWorker, workflowWorker, lookupWorker } = orderMailWorkerPair(setup());

  expect(lookupTaskQueueOf('mail-eu')).toBe('mail-eu-lookups');
  expect(lookupWorker.taskQueue).toBe('mail-eu-lookups');
  expect(Object.keys(lookupWorker.activities ?? {})).toEqual(['verifyOrderMail']);
  expect(lookupWorker.maxConcurrentActivityTaskExecutions).toBe(7);
  expect(lookupWorker.maxTaskQueueActivitiesPerSecond).toBeUndefined();
  expect(lookupWorker.workflowsPath).toBeUndefined();
  expect(lookupWorker.shutdownGraceTime).toBe(70_000);
  // The sends keep theirs; runs claimed by an older build still ask on the main queue, and are served there.
  expect(activityWorker.taskQueue).toBe('mail-eu');
  expect(activityWorker.maxTaskQueueActivitiesPerSecond).toBe(5);
  expect(activityWorker.maxConcurrentActivityTaskExecutions).toBe(100);
  expect(Object.keys(activityWorker.activities ?? {})).toContain('verifyOrderMail');
  // One Worker Deployment Version for all three, so a pinned run's lookups go to its own build.
  for (const worker of [activityWorker, workflowWorker, lookupWorker]) {
    expect(worker.workerDeploymentOptions).toEqual({
      version: { deploymentName: 'order-mail', buildId: '2.5.0' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
  }
});

it('the worker’s and every provider’s settings name the lookup queue, so each claim hands it to the run', () => {
  const eu = testSettings({ verification: { ...VERIFY, deadlineMs: 9_000 } });
  const unverified = testSettings();
  const deps = withLookupsOn(
    setup(
      new Map([
        ['postmark', eu],
        ['resend', unverified],
      ]),
    ).dependencies,
    'mail-eu-lookups',
  );

  expect(deps.settings.verification).toEqual({ ...VERIFY, taskQueue: 'mail-eu-lookups' });
  expect(deps.providerSettings?.get('postmark')?.verification).toEqual({
    ...VERIFY,
    deadlineMs: 9_000,
    taskQueue: 'mail-eu-lookups',
  });
  // Nothing to ask, nothing to schedule.
  expect(deps.providerSettings?.get('resend')).toEqual(unverified);
});
