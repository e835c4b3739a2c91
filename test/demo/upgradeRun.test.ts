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
import { REPLAY_HISTORIES_DIRECTORY } from '../replay/histories';

const NEXT_BUILD = path.join(__dirname, '..', '..', 'dev', 'demo', 'upgrade', 'nextBuildWorkflows.ts');
const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;

const ROLLED: UpgradeFacts = {
  deploymentName: 'order-mail-chaos',
  switches: ['n', 'n1', 'n'].map((build, index) => ({
    to: `order-mail-chaos:${build}`,
    atMs: 10_000 + index * 30_000,
    openByBuild: { unversioned: { sending: 3, unknown: 1, failed: 2, held: 0 } },
    rows: { claimed: 1, midSend: 2, notSent: 2 },
  })),
  unversionedDrainedAtMs: 14_000,
  runsByBuild: { unversioned: 40, n: 80, n1: 30 },
  nondeterminismFailures: [],
  crossedBuilds: [],
  movedFromUnversioned: 12,
  historiesUnreadable: 0,
  failure: null,
};

describe('--upgrade-at', () => {
  it('switches at its moment and every --upgrade-every seconds (30 unless given); none without it', () => {
    expect(parse().upgrade).toBeNull();
    expect(parse('--upgrade-at', '10').upgrade).toMatchObject({ atMs: 10_000, everyMs: 30_000 });
    expect(parse('--upgrade-every', '15', '--upgrade-at', '10').upgrade).toMatchObject({ everyMs: 15_000 });
  });

  it('refuses --upgrade-every alone, and --cluster', () => {
    expect(() => parse('--upgrade-every', '15')).toThrow(UsageError);
    expect(() => parse('--upgrade-at', '10', '--cluster')).toThrow(UsageError);
  });
});

describe('the upgrade invariants', () => {
  it('hold for a rollout with three switches, no non-determinism and no run across builds', () => {
    expect(upgradeInvariants(ROLLED).every((invariant) => invariant.holds)).toBe(true);
  });

  it('fail on a missing switch, a non-determinism failure, a run completed by two builds, an unread history', () => {
    const failing = (facts: Partial<UpgradeFacts>) =>
      upgradeInvariants({ ...ROLLED, ...facts })
        .filter((invariant) => !invariant.holds)
        .map((invariant) => invariant.name);
    expect(failing({ switches: ROLLED.switches.slice(0, 2) })).toEqual(['upgrade-switches-made']);
    expect(failing({ failure: 'Temporal down' })).toEqual(['upgrade-switches-made']);
    expect(failing({ nondeterminismFailures: ['17'] })).toEqual(['no-nondeterminism']);
    expect(failing({ historiesUnreadable: 1 })).toEqual(['no-nondeterminism']);
    expect(failing({ crossedBuilds: ['17 (n → n1)'] })).toEqual(['no-run-crossed-builds']);
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
