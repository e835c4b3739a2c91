// --failover: its defaults (the outage, accept-then-drop alone, no kills or restarts, 3 workers), the flags that
// change them, and the mistakes it refuses.
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import { FAILOVER_DEFAULTS } from '../../dev/demo/profiles';
import type { RunOptions } from '../../dev/demo/runOptions';

const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;

describe('--failover', () => {
  it('measures failover from a quiet system: the outage and accept-then-drop, nothing else', () => {
    const options = parse('--failover');
    expect(options.failover).toEqual(FAILOVER_DEFAULTS.failover);
    expect(options.faults).toEqual({
      acceptThenDrop: 0.1,
      hang: 0,
      serverError: 0,
      tooManyRequests: 0,
      unavailable: 0,
      dropWithoutProcessing: 0,
      slow: 0,
    });
    expect(options).toMatchObject({
      workers: 3,
      killEveryMs: 0,
      refuseEveryMs: 0,
      restartPostgresAt: null,
      restartTemporalAt: null,
    });
  });

  it('takes the outage’s moment and length, and the flags that ask for more faults', () => {
    const options = parse(
      '--failover',
      '--outage-at',
      '6',
      '--outage-for',
      '24',
      '--kill-every',
      '5',
      '--429',
      '0.02',
    );
    expect(options.failover).toMatchObject({ outageAtMs: 6_000, outageForMs: 24_000 });
    expect(options.killEveryMs).toBe(5_000);
    expect(options.faults.tooManyRequests).toBe(0.02);
  });

  it.each([
    [['--outage-for', '20'], /need --failover/],
    [['--failover', '--outage-for', '2'], /at least 3 seconds/],
    [['--failover', '--operators'], /runs alone/],
    [['--failover', '--transport', 'smtp'], /over HTTP/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(...argv)).toThrow(UsageError);
    expect(() => parse(...argv)).toThrow(message);
  });
});
