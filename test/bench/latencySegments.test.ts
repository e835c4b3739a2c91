import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { latencySegments, summarizeSegments } from '../../dev/bench/latencySegments';

const stored = (name: string): unknown =>
  JSON.parse(readFileSync(path.join(__dirname, '../replay/histories', name), 'utf8')) as unknown;

describe('where a run’s latency went, from its history', () => {
  it('splits an accepted run at its server timestamps (nanoseconds kept)', () => {
    const segments = latencySegments(stored('accepted.json'))!;
    const expected = {
      firstTaskDispatch: 9.057,
      firstTask: 138.959,
      sendDispatch: 0.305,
      send: 29.246,
      secondTaskDispatch: 3.444,
      secondTask: 23.725,
      run: 206.274,
    };
    expect(Object.keys(segments)).toEqual(Object.keys(expected));
    // Epoch milliseconds in a double keep about 0.0005 ms: two decimals are exact.
    for (const [name, ms] of Object.entries(expected)) {
      expect(segments[name as keyof typeof expected]).toBeCloseTo(ms, 2);
    }
  });

  it('leaves out runs of another shape (a retried send, a timer)', () => {
    expect(latencySegments(stored('retry-after-429.json'))).toBeNull();
    expect(latencySegments(stored('unknown-assume-sent.json'))).toBeNull();
    const summary = summarizeSegments([stored('accepted.json'), stored('retry-after-429.json')]);
    expect(summary?.runs).toBe(1);
    expect(summary?.p50Ms.send).toBe(29.2);
  });
});
