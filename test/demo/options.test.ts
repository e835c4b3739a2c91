// The runner's flags: each profile's defaults, the per-fault overrides, and the mistakes it refuses.
import { describe, expect, it } from 'vitest';
import { faultRates, parseRunOptions, PROFILES, UsageError } from '../../src/demo/options';

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
});
