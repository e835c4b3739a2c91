// `npm run bench:profile -- [--skip-ms N] DIR_OR_FILE...`: where the CPU in .cpuprofile files went, as a
// table of shares (dev/bench/profileShares.ts). docs/benchmarks.md shows how to profile the bench's workers.
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
    options: { 'skip-ms': { type: 'string', default: '0' } },
    allowPositionals: true,
  });
  const skipMs = Number(values['skip-ms']);
  const files = profileFiles(positionals);
  if (files.length === 0 || !Number.isFinite(skipMs) || skipMs < 0) {
    console.error(
      'usage: profileShares.ts [--skip-ms N] DIR_OR_FILE... (.cpuprofile files of node --cpu-prof)',
    );
    process.exit(2);
  }
  const shares = profileShares(files, skipMs);
  const percent = (ms: number): string => `${((100 * ms) / shares.busyMs).toFixed(1)}%`;
  console.log(
    `${files.length} profile(s), ${shares.busyMs.toFixed(0)} ms busy after the first ${skipMs} ms of each`,
  );
  for (const [file, ms] of [...shares.byFile].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${percent(ms).padStart(6)}  ${file}`);
  }
  for (const [name, ms] of [...shares.byCategory].sort((a, b) => b[1] - a[1])) {
    console.log(`${percent(ms).padStart(6)}  ${ms.toFixed(0).padStart(7)} ms  ${name}`);
  }
}

main();
