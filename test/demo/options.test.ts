// The runner's flags: each profile's defaults, the per-fault overrides, and the mistakes it refuses.
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import { faultRates, PROFILES, SLOW_MS } from '../../dev/demo/profiles';
import { smtpFaultRates } from '../../dev/demo/smtpFaultRates';

describe('parseRunOptions', () => {
  it('starts from the named profile', () => {
    expect(parseRunOptions(['--profile', 'demo'])).toEqual(PROFILES.demo);
    expect(parseRunOptions(['--profile', 'chaos'])).toEqual(PROFILES.chaos);
  });

  it('meets the issue’s chaos figures by default: ≥10% accept-then-drop, a kill at least every 5 s, both restarts', () => {
    const chaos = PROFILES.chaos;
    expect(chaos.orders).toBeGreaterThanOrEqual(2_000);
    expect(chaos.workers).toBeGreaterThanOrEqual(4);
    expect(chaos.faults.acceptThenDrop).toBeGreaterThanOrEqual(0.1);
    expect(chaos.killEveryMs).toBeGreaterThan(0);
    expect(chaos.killEveryMs).toBeLessThanOrEqual(5_000);
    expect(chaos.restartPostgresAt).not.toBeNull();
    expect(chaos.restartTemporalAt).not.toBeNull();
  });

  it('overrides one fault, a policy and the restarts', () => {
    const options = parseRunOptions([
      '--profile',
      'chaos',
      '--accept-then-drop',
      '15%',
      '--policy',
      'assume-failed',
      '--restart-temporal',
      'off',
      '--kill-every',
      '2.5',
    ]);
    expect(options).toMatchObject({
      policy: 'assume-failed',
      restartTemporalAt: null,
      killEveryMs: 2_500,
      faults: { ...PROFILES.chaos.faults, acceptThenDrop: 0.15 },
    });
  });

  it('refuses unknown flags, bad values and fault rates that add up to more than 1', () => {
    expect(() => parseRunOptions(['--fast'])).toThrow(UsageError);
    expect(() => parseRunOptions(['--policy', 'assume-nothing'])).toThrow(UsageError);
    expect(() => parseRunOptions(['--orders', '0'])).toThrow(UsageError);
    expect(() => parseRunOptions(['--accept-then-drop', '0.7', '--hang', '0.5'])).toThrow(/more than 1/);
  });

  it('turns a mix into the sandbox plan, leaving out the faults that are off', () => {
    const rates = faultRates({ ...PROFILES.demo.faults, hang: 0, serverError: 0.04 });
    expect(rates.map((rate) => rate.fault)).toEqual([
      { kind: 'accept-then-drop' },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 502, record: true },
      { kind: 'status', status: 429, retryAfterSeconds: 1 },
      { kind: 'status', status: 503 },
    ]);
    expect(rates.find((rate) => rate.fault.kind === 'status' && rate.fault.status === 500)?.probability).toBe(
      0.02,
    );
  });

  it('picks the transport and the inbox: the demo shows the inbox, chaos leaves it off unless asked', () => {
    expect(PROFILES.demo).toMatchObject({ transport: 'http', inbox: true });
    expect(PROFILES.chaos).toMatchObject({ transport: 'http', inbox: false });
    expect(parseRunOptions(['--transport', 'smtp', '--no-inbox'])).toMatchObject({
      transport: 'smtp',
      inbox: false,
    });
    expect(parseRunOptions(['--profile', 'chaos', '--inbox'])).toMatchObject({ inbox: true });
    expect(() => parseRunOptions(['--transport', 'pigeon'])).toThrow(/--transport must be one of http, smtp/);
  });

  it('reads the same mix as SMTP faults, with chaos keeping ≥10% drop after the final dot', () => {
    const rates = smtpFaultRates(PROFILES.chaos.faults);
    expect(rates.map((rate) => rate.fault)).toEqual([
      { kind: 'drop-after-data' },
      { kind: 'hang-after-data', ms: 10_000 },
      { kind: 'reply', at: 'end-of-data', code: 451 },
      { kind: 'reply', at: 'rcpt', code: 451 },
      { kind: 'reply', at: 'greeting', code: 421 },
      { kind: 'drop-before-data' },
    ]);
    expect(rates[0]!.probability).toBeGreaterThanOrEqual(0.1);
    expect(
      smtpFaultRates({ ...PROFILES.chaos.faults, hang: 0 }).map((rate) => rate.fault.kind),
    ).not.toContain('hang-after-data');
  });

  it('turns operator chaos on with --operators: slow answers and the sweep Schedule unless set, all in flags', () => {
    expect(PROFILES.chaos).toMatchObject({ operators: null, sweepEveryMs: 0, faults: { slow: 0 } });
    const on = parseRunOptions(['--profile', 'chaos', '--operators', '--operator-every', '0.5']);
    expect(on).toMatchObject({
      operators: { everyMs: 500 },
      sweepEveryMs: 15_000,
      faults: { ...PROFILES.chaos.faults, slow: 0.25 },
    });
    // A flag of its own wins, before or after --operators.
    expect(
      parseRunOptions(['--profile', 'chaos', '--slow', '0', '--operators', '--sweep-every', '0']),
    ).toMatchObject({
      sweepEveryMs: 0,
      faults: { slow: 0 },
    });
    expect(faultRates({ ...PROFILES.chaos.faults, slow: 0.25 }).at(-1)).toEqual({
      fault: { kind: 'accept-then-hang', ms: SLOW_MS },
      probability: 0.25,
    });
    expect(() => parseRunOptions(['--operator-every', '1'])).toThrow(/needs --operators/);
    expect(() => parseRunOptions(['--operators', '--operator-every', '0'])).toThrow(UsageError);
  });

  it('turns cluster chaos on with --cluster: the usual faults, 3 workers unless --workers, acts every 15 s', () => {
    expect(PROFILES.chaos.cluster).toBeNull();
    const on = parseRunOptions(['--profile', 'chaos', '--cluster']);
    expect(on).toMatchObject({
      cluster: { actEveryMs: 15_000, downForMs: 10_000 },
      workers: 3,
      faults: PROFILES.chaos.faults,
      killEveryMs: PROFILES.chaos.killEveryMs,
      restartPostgresAt: PROFILES.chaos.restartPostgresAt,
    });
    expect(
      parseRunOptions(['--profile', 'chaos', '--workers', '5', '--cluster', '--cluster-every', '4']),
    ).toMatchObject({ workers: 5, cluster: { actEveryMs: 4_000 } });
    expect(parseRunOptions(['--cluster', '--cluster-down-for', '2'])).toMatchObject({
      cluster: { downForMs: 2_000 },
    });
    expect(() => parseRunOptions(['--cluster-every', '5'])).toThrow(/need --cluster/);
  });
});
