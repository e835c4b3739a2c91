// The rollout chaos run (--upgrade-at): the invariants that judge it, and its build N+1, whose mail workflow must
// really differ: N's histories do not replay on it, and no patch makes them.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { UpgradeFacts } from '../../dev/demo/report/facts';
import { upgradeInvariants } from '../../dev/demo/report/scenarioInvariants';
import { REPLAY_HISTORIES_DIRECTORY } from '../replay/histories';

const NEXT_BUILD = path.join(__dirname, '..', '..', 'dev', 'demo', 'upgrade', 'nextBuildWorkflows.ts');
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
