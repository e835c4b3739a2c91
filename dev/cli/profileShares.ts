// `npm run bench:profile -- [--skip-ms N] [--top N] [--orders N] DIR_OR_FILE...`: where the CPU in .cpuprofile
// files went, as a table of shares (dev/bench/profileShares.ts); --top lists the N functions with the most self
// time; --orders, the orders the profiled processes ran, adds µs per order. docs/benchmarks.md shows how to
// profile the bench's workers.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { profileShares } from '../bench/profileShares';

function profileFiles(inputs: readonly string[]): string[] {
  return inputs.flatMap((input) =>
    statSync(input).isDirectory()
      ? readdirSync(input)
          .filter((name) => name.endsWith('.cpuprofile'))
          .map((name) => path.join(input, name))
      : [input],
  );
}

function main(): void {
  const { values, positionals } = parseArgs({
    options: {
      'skip-ms': { type: 'string', default: '0' },
      top: { type: 'string', default: '0' },
      orders: { type: 'string', default: '0' },
    },
    allowPositionals: true,
  });
  const skipMs = Number(values['skip-ms']);
  const top = Number(values.top);
  const orders = Number(values.orders);
  const files = profileFiles(positionals);
  const counts = [skipMs, top, orders];
  if (files.length === 0 || counts.some((count) => !Number.isFinite(count) || count < 0)) {
    console.error(
      'usage: profileShares.ts [--skip-ms N] [--top N] [--orders N] DIR_OR_FILE... (.cpuprofile files of node --cpu-prof)',
    );
    process.exit(2);
  }
  const shares = profileShares(files, skipMs);
  const percent = (ms: number): string =>
    `${((100 * ms) / shares.busyMs).toFixed(1)}%` +
    (orders > 0 ? ` ${((1_000 * ms) / orders).toFixed(0).padStart(5)} µs/order` : '');
  console.log(
    `${files.length} profile(s), ${shares.busyMs.toFixed(0)} ms busy after the first ${skipMs} ms of each` +
      (orders > 0 ? `, ${orders} orders` : ''),
  );
  for (const [file, ms] of [...shares.byFile].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${percent(ms).padStart(6)}  ${file}`);
  }
  for (const [name, ms] of [...shares.byCategory].sort((a, b) => b[1] - a[1])) {
    console.log(`${percent(ms).padStart(6)}  ${ms.toFixed(0).padStart(7)} ms  ${name}`);
  }
  if (top > 0) {
    console.log(`top ${top} functions by self time:`);
    for (const [frame, ms] of [...shares.byFrame].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`${percent(ms).padStart(6)}  ${ms.toFixed(0).padStart(7)} ms  ${frame}`);
    }
  }
}

main();
