// The runner's flags, as a smoke test: each family parses once and each family's mistake is refused. What the
// figures rest on stays asserted in full: the profiles are as hard as the docs say, and agree with the product's
// own limits (settle delays past the sandbox's indexing lag, slow answers inside the client's deadlines).
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import { faultRates, PROFILES } from '../../dev/demo/profiles';
import type { RunOptions } from '../../dev/demo/runOptions';
import { smtpFaultRates } from '../../dev/demo/smtpFaultRates';
import type { Stack } from '../../dev/demo/stack';
import { upgradeTimes, upgradeWorkerEnv } from '../../dev/demo/upgradeLoad';
import { verifies } from '../../dev/demo/verificationOptions';
import { workerEnvironment } from '../../dev/demo/workerEnvironment';
import { loadConfig } from '../../src/config/loadConfig';
import { MAIL_PROVIDER_FACTS, MAIL_PROVIDER_NAMES } from '../../src/mail/providers/mailProvider';
import { DEFAULT_INDEXING_LAG_MS } from '../../packages/sandbox/src/lookups';

const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;
const sum = (rates: number[]) => rates.reduce((total, rate) => total + rate, 0);
/** Throws what loadConfig says of a worker environment. */
const workerConfig = (env: Record<string, string>) =>
  loadConfig({
    DATABASE_URL: 'postgres://u:p@localhost:5432/shop',
    MAIL_DEPLOYMENT_ID: 'test-deployment',
    MAIL_API_KEY: 'sandbox-key',
    MAIL_API_BASE_URL: 'http://127.0.0.1:4010',
    ...env,
  });

describe('the runner’s flags', () => {
  it.each<[string[], object]>([
    [
      [
        '--accept-then-drop',
        '15%',
        '--policy',
        'assume-failed',
        '--restart-temporal',
        'off',
        '--kill-every',
        '2.5',
      ],
      {
        policy: 'assume-failed',
        restartTemporalAt: null,
        killEveryMs: 2_500,
        faults: { acceptThenDrop: 0.15 },
      },
    ],
    [['--transport', 'smtp', '--no-inbox'], { transport: 'smtp', inbox: false }],
    [['--operators', '--operator-every', '0.5'], { operators: { everyMs: 500 }, sweepEveryMs: 15_000 }],
    [
      ['--cluster', '--cluster-every', '4', '--cluster-down-for', '2'],
      { workers: 3, cluster: { actEveryMs: 4_000, downForMs: 2_000 } },
    ],
    [
      [
        '--provider',
        'postmark',
        '--no-verify',
        '--settle-delay',
        '2.5',
        '--lookup-faults',
        '10%',
        '--lying-provider',
      ],
      {
        verification: {
          provider: 'postmark',
          verify: false,
          settleDelayMs: 2_500,
          lookupFaults: 0.1,
          lyingProvider: true,
        },
      },
    ],
    [
      ['--lookup-reorder', '60', '--reorder-watermark', 'lying', '--reorder-share', '10%'],
      { verification: { lookupReorder: { holdMs: 60_000, share: 0.1, watermark: 'lying' } } },
    ],
    [
      ['--failover', '--outage-at', '6', '--outage-for', '24'],
      { failover: { outageAtMs: 6_000, outageForMs: 24_000 }, workers: 3, killEveryMs: 0 },
    ],
    [['--send-outage', '120'], { sendOutage: { forMs: 120_000 }, verification: { settleDelayMs: 30_000 } }],
    [['--hold-at', '8', '--hold-for', '20'], { sendHold: { atMs: 8_000, forMs: 20_000 } }],
    [
      ['--provider-change', '--drain-at', '15', '--rotate-key-at', '40'],
      { providerChange: { drainAtMs: 15_000, rotateKeyAtMs: 40_000 }, failover: { outageForMs: 0 } },
    ],
    [
      ['--upgrade-at', '10', '--upgrade-every', '15', '--orders', '80', '--upgrade-min-per-state', '3'],
      { upgrade: { atMs: 10_000, everyMs: 15_000, minPerState: 3, shapedLoad: true } },
    ],
    [
      ['--upgrade-at', '10', '--upgrade-plain-load'],
      { upgrade: { shapedLoad: false }, faults: PROFILES.chaos.faults },
    ],
  ])('takes %j', (argv, expected) => {
    expect(parse(...argv)).toMatchObject(expected);
  });

  it.each<[string[], RegExp]>([
    [['--fast'], /--fast/],
    [['--orders', '0'], /--orders/],
    [['--accept-then-drop', '0.7', '--hang', '0.5'], /more than 1/],
    [['--transport', 'pigeon'], /--transport must be one of http, smtp/],
    [['--operator-every', '1'], /needs --operators/],
    [['--cluster-every', '5'], /need --cluster/],
    [['--transport', 'smtp', '--provider', 'postmark'], /--transport smtp/],
    [['--reorder-watermark', 'sometimes'], /--reorder-watermark/],
    [['--failover', '--outage-for', '2'], /at least 3 seconds/],
    [['--send-outage', '20', '--failover'], /runs alone/],
    [['--hold-for', '20'], /--hold-at/],
    [['--provider-change', '--drain-at', '40', '--rotate-key-at', '15'], /--drain-at/],
    [['--upgrade-at', '10', '--cluster'], /--cluster/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(...argv)).toThrow(UsageError);
    expect(() => parse(...argv)).toThrow(message);
  });
});

describe('the profiles the figures come from', () => {
  it('chaos is as hard as the docs say: ≥10% accept-then-drop over HTTP and SMTP, a kill every ≤5 s, both restarts', () => {
    const chaos = PROFILES.chaos;
    expect(chaos.orders).toBeGreaterThanOrEqual(2_000);
    expect(chaos.workers).toBeGreaterThanOrEqual(4);
    expect(chaos.faults.acceptThenDrop).toBeGreaterThanOrEqual(0.1);
    expect(chaos.killEveryMs).toBeGreaterThan(0);
    expect(chaos.killEveryMs).toBeLessThanOrEqual(5_000);
    expect(chaos.restartPostgresAt).not.toBeNull();
    expect(chaos.restartTemporalAt).not.toBeNull();
    // Every rate of the mix reaches the sandbox's plan, and a rate of 0 plans nothing.
    expect(sum(faultRates(chaos.faults).map((rate) => rate.probability))).toBeCloseTo(
      sum(Object.values(chaos.faults) as number[]),
    );
    expect(faultRates({ ...chaos.faults, hang: 0 }).every((rate) => rate.probability > 0)).toBe(true);
    const smtpDrop = smtpFaultRates(chaos.faults).find((rate) => rate.fault.kind === 'drop-after-data');
    expect(smtpDrop?.probability).toBeGreaterThanOrEqual(0.1);
  });

  it('the demo and chaos verify, each provider’s settle delay outlasting the sandbox’s indexing lag', () => {
    for (const profile of [PROFILES.demo, PROFILES.chaos]) {
      expect(verifies(profile.verification)).toBe(true);
      expect(profile.verification.settleDelayMs).toBeGreaterThan(DEFAULT_INDEXING_LAG_MS);
    }
    for (const name of MAIL_PROVIDER_NAMES) {
      const facts = MAIL_PROVIDER_FACTS[name].verification;
      if (facts !== null) expect(facts.settleDelayMs).toBeGreaterThan(DEFAULT_INDEXING_LAG_MS);
    }
    expect(verifies(parse('--provider', 'resend').verification)).toBe(false);
  });

  it('the rollout’s shaped load keeps slow answers inside the client’s deadlines and hung ones past them', () => {
    for (const everyMs of [10_000, 60_000]) {
      const times = upgradeTimes(everyMs);
      expect(times.slowMs).toBeLessThan(times.headersTimeoutMs);
      expect(times.headersTimeoutMs).toBeLessThan(times.overallTimeoutMs);
      expect(times.hangMs).toBeGreaterThan(times.overallTimeoutMs);
      expect(() => workerConfig(upgradeWorkerEnv(times))).not.toThrow();
    }
    // Every worker slot can hold a send's HTTP connection through a slow answer.
    const shaped = parse('--upgrade-at', '10');
    const stack = {
      databaseUrl: 'postgres://x',
      temporal: { address: 'a', namespace: 'n' },
      mail: { workerEnv: {} },
    };
    const env = workerEnvironment(shaped, stack as unknown as Stack, 'q', 'bundle.js');
    expect(env.MAIL_CONNECTIONS).toBe(String(shaped.workerConcurrency));
    expect(() => workerConfig(env)).not.toThrow();
  });

  it('failover and the send outage are measured from a quiet system: no kills, no restarts, one fault at most', () => {
    for (const [argv, faults] of [
      [['--failover'], ['acceptThenDrop']],
      [['--send-outage', '60'], []],
    ] as const) {
      const options = parse(...argv);
      expect(options).toMatchObject({
        killEveryMs: 0,
        refuseEveryMs: 0,
        restartPostgresAt: null,
        restartTemporalAt: null,
      });
      expect(
        Object.entries(options.faults)
          .filter(([, rate]) => rate > 0)
          .map(([name]) => name),
      ).toEqual(faults);
    }
  });
});
