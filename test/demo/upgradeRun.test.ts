// --upgrade-at / --upgrade-every: the rollout chaos run's options, the invariants that judge it, and its build
// N+1, whose mail workflow must really differ: N's histories do not replay on it, and no patch makes them.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import type { UpgradeFacts } from '../../dev/demo/report/facts';
import { upgradeInvariants } from '../../dev/demo/report/scenarioInvariants';
import type { RunOptions } from '../../dev/demo/runOptions';
import { PROFILES } from '../../dev/demo/profiles';
import {
  shapedUpgradeTimes,
  startRateAt,
  UPGRADE_FAULTS,
  UPGRADE_START_SHARES,
  upgradeStartSteps,
  UPGRADE_WORKER_CONCURRENCY,
  upgradeTimes,
  upgradeWorkerEnv,
} from '../../dev/demo/upgradeLoad';
import type { Stack } from '../../dev/demo/stack';
import { workerEnvironment } from '../../dev/demo/workerEnvironment';
import { loadConfig } from '../../src/config/loadConfig';
import { REPLAY_HISTORIES_DIRECTORY } from '../replay/histories';

const NEXT_BUILD = path.join(__dirname, '..', '..', 'dev', 'demo', 'upgrade', 'nextBuildWorkflows.ts');
const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;
/** What loadConfig says of the workers' deadlines under the shaped load: null when it takes them. */
const loadConfigProblem = (env: Record<string, string>): string | null => {
  try {
    loadConfig({
      DATABASE_URL: 'postgres://u:p@localhost:5432/shop',
      MAIL_DEPLOYMENT_ID: 'test-deployment',
      MAIL_API_KEY: 'sandbox-key',
      MAIL_API_BASE_URL: 'http://127.0.0.1:4010',
      ...env,
    });
    return null;
  } catch (error) {
    return (error as Error).message;
  }
};

const OLD_RUNS = {
  open: 14,
  claimed: 3,
  midSend: 4,
  settleDelay: 3,
  notSentBackoff: 3,
  other: 1,
  countedInMs: 200,
};
/** 2.0 → N current → N+1 ramping → N+1 current → back to N. */
const CHAIN = [
  { build: 'n', kind: 'current' },
  { build: 'n1', kind: 'ramping' },
  { build: 'n1', kind: 'current' },
  { build: 'n', kind: 'current' },
] as const;
const ROLLED: UpgradeFacts = {
  deploymentName: 'order-mail-chaos',
  shapedLoad: true,
  drainStallBoundMs: 90_000,
  minPerState: 3,
  switches: CHAIN.map(({ build, kind }, index) => ({
    to: `order-mail-chaos:${build}`,
    kind,
    percentage: kind === 'ramping' ? 50 : 100,
    atMs: 10_000 + index * 30_000,
    openByBuild: { unversioned: { sending: 3, unknown: 1, failed: 2, held: 0 } },
    rows: { claimed: 1, midSend: 2, notSent: 2 },
    from: ['unversioned', 'n', 'n', 'n1'][index]!,
    oldRuns: OLD_RUNS,
    returnedTo: index === 3 ? { build: 'n', runs: OLD_RUNS } : null,
    polling: { build, workersStartedInMs: 20_000, confirmedAtMs: 9_000 + index * 30_000, waitedMs: 0 },
  })),
  unversionedDrainedAtMs: 14_000,
  runsByBuild: { unversioned: 40, n: 80, n1: 30 },
  killsByBuild: { n: 3, n1: 2 },
  nondeterminismFailures: [],
  crossedBuilds: [],
  movedFromUnversioned: 12,
  historiesUnreadable: 0,
  failure: null,
  faultsEndedAtMs: 95_000,
};

describe('--upgrade-at', () => {
  it('switches at its moment and every --upgrade-every seconds (30 unless given); none without it', () => {
    expect(parse().upgrade).toBeNull();
    expect(parse('--upgrade-at', '10').upgrade).toMatchObject({ atMs: 10_000, everyMs: 30_000 });
    expect(parse('--upgrade-every', '15', '--upgrade-at', '10').upgrade).toMatchObject({ everyMs: 15_000 });
  });

  it('refuses --upgrade-every or --upgrade-min-per-state alone, --cluster, and SMTP', () => {
    expect(() => parse('--upgrade-every', '15')).toThrow(UsageError);
    expect(() => parse('--upgrade-min-per-state', '5')).toThrow(UsageError);
    expect(() => parse('--upgrade-plain-load')).toThrow(UsageError);
    expect(() => parse('--upgrade-at', '10', '--cluster')).toThrow(UsageError);
    expect(() => parse('--upgrade-at', '10', '--transport', 'smtp')).toThrow(UsageError);
  });

  it('asks 50 old runs per place at each switch from 1,000 orders, none below, or what --upgrade-min-per-state says', () => {
    expect(parse('--upgrade-at', '10', '--orders', '1000').upgrade?.minPerState).toBe(50);
    expect(parse('--upgrade-at', '10', '--orders', '999').upgrade?.minPerState).toBe(0);
    expect(
      parse('--upgrade-at', '10', '--orders', '80', '--upgrade-min-per-state', '3').upgrade?.minPerState,
    ).toBe(3);
  });

  it('shapes the load unless a flag says otherwise: its fault mix, its slots, a settle delay of a period', () => {
    const shaped = parse('--upgrade-at', '10', '--upgrade-every', '40');
    expect(shaped.faults).toEqual(UPGRADE_FAULTS);
    expect(shaped.workerConcurrency).toBe(UPGRADE_WORKER_CONCURRENCY);
    // Every slot can hold a send's HTTP connection through a slow answer.
    const stack = {
      databaseUrl: 'postgres://x',
      temporal: { address: 'a', namespace: 'n' },
      mail: { workerEnv: {} },
    };
    const env = workerEnvironment(shaped, stack as unknown as Stack, 'q', 'bundle.js');
    expect(env.MAIL_CONNECTIONS).toBe(String(UPGRADE_WORKER_CONCURRENCY));
    expect(loadConfigProblem(env)).toBeNull();
    expect(shaped.verification.settleDelayMs).toBe(40_000);
    const given = parse(
      '--upgrade-at',
      '10',
      '--429',
      '0.05',
      '--worker-concurrency',
      '50',
      '--settle-delay',
      '5',
    );
    expect(given.faults).toEqual({ ...UPGRADE_FAULTS, tooManyRequests: 0.05 });
    expect(given.workerConcurrency).toBe(50);
    expect(given.verification.settleDelayMs).toBe(5_000);
  });

  it("--upgrade-plain-load keeps the chaos profile's load: its faults, slots, settle delay and deadlines", () => {
    const plain = parse('--upgrade-at', '10', '--upgrade-plain-load', '--orders', '1000');
    expect(plain.upgrade).toMatchObject({ atMs: 10_000, shapedLoad: false, minPerState: 0 });
    expect(plain.faults).toEqual(PROFILES.chaos.faults);
    expect(plain.workerConcurrency).toBe(PROFILES.chaos.workerConcurrency);
    expect(plain.verification.settleDelayMs).toBe(PROFILES.chaos.verification.settleDelayMs);
    expect(shapedUpgradeTimes(plain)).toBeNull();
    const shaped = parse('--upgrade-at', '10', '--orders', '1000');
    expect(shaped.upgrade).toMatchObject({ shapedLoad: true, minPerState: 50 });
    expect(shapedUpgradeTimes(shaped)).toEqual(upgradeTimes(30_000));
    expect(
      parse('--upgrade-at', '10', '--upgrade-plain-load', '--upgrade-min-per-state', '2').upgrade
        ?.minPerState,
    ).toBe(2);
  });

  it('paces one client by phase: fast while 2.0 runs alone, then N, the ramp (both builds) and N+1 each swamped', () => {
    const steps = upgradeStartSteps(1_000, 100_000, 150_000);
    expect(steps).toEqual([
      { fromMs: 0, rate: 2.4 },
      { fromMs: 100_000, rate: 2.13 },
      { fromMs: 250_000, rate: 1.6 },
      { fromMs: 400_000, rate: 1.13 },
      { fromMs: 550_000, rate: 2.13 },
    ]);
    // Orders are left after the rollback (at its earliest), so N gets runs again and no phase runs dry.
    const shares = Object.values(UPGRADE_START_SHARES).reduce((sum, share) => sum + share, 0);
    expect(shares).toBeLessThan(1);
    expect(shares).toBeGreaterThan(0.9);
    // Fewer orders and a proportionally shorter schedule: the same rates, so the same shape.
    expect(upgradeStartSteps(300, 30_000, 45_000).map((step) => step.rate)).toEqual(
      steps.map((step) => step.rate),
    );
    expect(startRateAt(steps, 0)).toBe(2.4);
    expect(startRateAt(steps, 399_999)).toBe(1.6);
    expect(startRateAt(steps, 10_000_000)).toBe(2.13);

    const shaped = parse('--upgrade-at', '100', '--upgrade-every', '150', '--orders', '1000');
    expect(shaped).toMatchObject({ clients: 1, startRate: 2.4, startSteps: steps });
    expect(shaped.upgrade?.rampPercentage).toBe(50);
    const given = parse('--upgrade-at', '10', '--start-rate', '3.5', '--clients', '1');
    expect(given.startSteps).toBeUndefined();
    expect(given.startRate).toBe(3.5);
    expect(parse('--upgrade-at', '10', '--clients', '2').clients).toBe(2);
    expect(parse('--upgrade-at', '10', '--upgrade-plain-load').startSteps).toBeUndefined();
  });

  it('holds the slow answers inside the client deadlines and the hung ones past them, the send timeout past both', () => {
    for (const everyMs of [10_000, 60_000]) {
      const times = upgradeTimes(everyMs);
      expect(times.slowMs).toBeLessThan(times.headersTimeoutMs);
      expect(times.headersTimeoutMs).toBeLessThan(times.overallTimeoutMs);
      expect(times.hangMs).toBeGreaterThan(times.overallTimeoutMs);
      const problem = loadConfigProblem(upgradeWorkerEnv(times));
      expect(problem).toBeNull();
    }
  });
});

describe('the upgrade invariants', () => {
  it('hold for a rollout with four switches, no non-determinism and no run across builds', () => {
    expect(upgradeInvariants(ROLLED).every((invariant) => invariant.holds)).toBe(true);
  });

  it('fail on a missing switch, a non-determinism failure, a run completed by two builds, an unread history', () => {
    const failing = (facts: Partial<UpgradeFacts>) =>
      upgradeInvariants({ ...ROLLED, ...facts })
        .filter((invariant) => !invariant.holds)
        .map((invariant) => invariant.name);
    expect(failing({ switches: ROLLED.switches.slice(0, 3) })).toEqual(['upgrade-switches-made']);
    expect(failing({ failure: 'Temporal down' })).toEqual(['upgrade-switches-made']);
    expect(failing({ nondeterminismFailures: ['17'] })).toEqual(['no-nondeterminism']);
    expect(failing({ historiesUnreadable: 1 })).toEqual(['no-nondeterminism']);
    expect(failing({ crossedBuilds: ['17 (n → n1)'] })).toEqual(['no-run-crossed-builds']);
  });

  it('fail on the chain without its ramp: N+1 made current straight from N, three switches', () => {
    const [toN, , toNext, back] = ROLLED.switches;
    const result = upgradeInvariants({ ...ROLLED, switches: [toN!, toNext!, back!] }).find(
      (invariant) => invariant.name === 'upgrade-switches-made',
    );
    expect(result?.holds).toBe(false);
    expect(result?.violations).toEqual([
      '3 of 4 switches made',
      'switch 2 made order-mail-chaos:n1 current, not n1 ramping',
      'switch 3 made order-mail-chaos:n current, not n1 current',
    ]);
  });

  it("ask the rollback's minimum of the build it leaves (N+1), and report N's open runs beside them", () => {
    const few = { ...OLD_RUNS, claimed: 0, midSend: 1 };
    const returned = ROLLED.switches.map((shot, index) =>
      index === 3 ? { ...shot, returnedTo: { build: 'n', runs: few } } : shot,
    );
    expect(upgradeInvariants({ ...ROLLED, switches: returned }).every((i) => i.holds)).toBe(true);
    expect(ROLLED.switches.map((shot) => shot.returnedTo?.build ?? null)).toEqual([null, null, null, 'n']);
  });

  it('fail when a switch was made before its build was seen polling', () => {
    const early = ROLLED.switches.map((shot, index) =>
      index === 1 ? { ...shot, polling: { ...shot.polling, confirmedAtMs: shot.atMs + 1 } } : shot,
    );
    const result = upgradeInvariants({ ...ROLLED, switches: early }).find(
      (invariant) => invariant.name === 'upgrade-switches-made',
    );
    expect(result?.holds).toBe(false);
    expect(result?.violations).toEqual(['order-mail-chaos:n1 at 40 s: made before its workers polled']);
  });

  it('fail when a build got no run: N+1 made current after the last order started, or never', () => {
    const failing = (runsByBuild: Record<string, number>) =>
      upgradeInvariants({ ...ROLLED, runsByBuild }).filter((invariant) => !invariant.holds);
    expect(failing({ unversioned: 40, n: 110, n1: 0 })).toMatchObject([
      { name: 'runs-on-every-build', violations: ['no run on n1'] },
    ]);
    expect(failing({ unversioned: 40, n: 110 }).map((invariant) => invariant.name)).toEqual([
      'runs-on-every-build',
    ]);
  });

  it('fail when a switch met fewer old runs than asked in any one place', () => {
    const short = ROLLED.switches.map((shot, index) =>
      index === 3 ? { ...shot, oldRuns: { ...shot.oldRuns, notSentBackoff: 2 } } : shot,
    );
    const result = upgradeInvariants({ ...ROLLED, switches: short }).find(
      (invariant) => invariant.name === 'old-runs-per-state-at-switch',
    );
    expect(result?.holds).toBe(false);
    expect(result?.violations).toEqual(['order-mail-chaos:n at 100 s: 2 notSentBackoff of n1']);
    expect(upgradeInvariants({ ...ROLLED, switches: short, minPerState: 2 }).every((i) => i.holds)).toBe(
      true,
    );
  });
});

describe('build N+1', () => {
  it("changes the mail workflow's commands for real: a history of N does not replay on it", async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: NEXT_BUILD,
      logger: new DefaultLogger('WARN'),
    });
    // Its change is made without a patch: what a pinned build may do, and an unversioned one may not.
    const source = await readFile(NEXT_BUILD, 'utf8');
    expect(source).not.toMatch(/\bpatched\(/);
    const stored = JSON.parse(
      await readFile(path.join(REPLAY_HISTORIES_DIRECTORY, 'accepted.json'), 'utf8'),
    ) as { workflowId: string; history: unknown };
    await expect(
      Worker.runReplayHistory({ workflowBundle: { code } }, stored.history, stored.workflowId),
    ).rejects.toThrow(/[Nn]ondetermin/);
  }, 120_000);
});
