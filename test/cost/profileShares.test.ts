// The profile reader behind docs/benchmarks.md's table of where the worker's CPU goes: pure logic over the
// .cpuprofile format V8 writes, so a synthetic profile is the honest input.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { frameName, profileShares } from '../../dev/bench/profileShares';

const frame = (id: number, functionName: string, url: string) => ({ id, callFrame: { functionName, url } });

function writeProfile(samples: number[], timeDeltas: number[]): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'profile-shares-')), 'CPU.1.cpuprofile');
  const nodes = [
    frame(1, '(idle)', ''),
    frame(2, 'query', 'file:///app/node_modules/pg/lib/client.js'),
    frame(3, 'jsonLogLine', 'file:///app/src/workerLog.ts'),
    frame(4, 'bundle', 'file:///app/node_modules/webpack/lib/Compiler.js'),
    frame(5, '(garbage collector)', ''),
    frame(6, 'claim', 'file:///app/src/db/orderMailClaim.ts'),
  ];
  writeFileSync(file, JSON.stringify({ nodes, samples, timeDeltas }));
  return file;
}

describe('profileShares', () => {
  it('counts self time by what ran it, never idle or start-up', () => {
    // 1 ms each: idle, pg, pg, our log line, webpack (start-up), GC, our claim.
    const file = writeProfile([1, 2, 2, 3, 4, 5, 6], [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]);
    const shares = profileShares([file], 0);
    expect(shares.busyMs).toBe(5);
    expect(Object.fromEntries(shares.byCategory)).toEqual({
      'pg client and pool': 2,
      'our logging (src/workerLog.ts)': 1,
      GC: 1,
      'our code (src/, the rest)': 1,
    });
  });
  it('leaves out the first --skip-ms of each profile', () => {
    const file = writeProfile([2, 2, 3], [1_000, 1_000, 1_000]);
    const shares = profileShares([file], 2);
    expect(shares.busyMs).toBe(2);
    expect(shares.byCategory.get('pg client and pool')).toBe(1);
  });
  it('sums self time by function, named by its package or project file and line', () => {
    const file = writeProfile([2, 2, 6, 1], [1_000, 1_000, 1_000, 1_000]);
    const shares = profileShares([file], 0);
    expect(Object.fromEntries(shares.byFrame)).toEqual({
      'query pg/lib/client.js': 2,
      'claim src/db/orderMailClaim.ts': 1,
    });
    expect(
      frameName({ functionName: '', url: 'file:///app/dev/bench/card/activities.ts', lineNumber: 9 }),
    ).toBe('(anonymous) dev/bench/card/activities.ts:10');
  });
  it("counts the card's own code apart from the product's", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'profile-shares-')), 'CPU.2.cpuprofile');
    const nodes = [frame(1, 'cardClaim', 'file:///app/dev/bench/card/statements.ts')];
    writeFileSync(file, JSON.stringify({ nodes, samples: [1], timeDeltas: [1_000] }));
    expect(Object.fromEntries(profileShares([file], 0).byCategory)).toEqual({
      "the card's own code (dev/bench/card)": 1,
    });
  });
});
