// `npm run cutover`: the cut-over run, old Python workers and ours on the same orders (dev/cutover/cutoverRun.ts,
// docs/adoption.md). Prints the report as JSON on stdout (progress on stderr); exits 1 when an invariant fails.
//
//   npm run cutover -- [--orders N] [--old-workers N] [--new-workers N] [--seed N] [--no-faults] [--out FILE]
// --out also writes the report to FILE (setup's lines go to stdout before it).
import { writeFile } from 'node:fs/promises';
import { CUTOVER_DEFAULTS, runCutover, type CutoverOptions } from '../cutover/cutoverRun';

const USAGE =
  'Usage: npm run cutover -- [--orders N] [--old-workers N] [--new-workers N] [--seed N] [--no-faults] [--out FILE]';

function parse(args: string[]): { options: CutoverOptions; out: string | null } {
  let out: string | null = null;
  const options: CutoverOptions = { ...CUTOVER_DEFAULTS, faults: { ...CUTOVER_DEFAULTS.faults } };
  const count = (flag: string, text: string | undefined): number => {
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 1)
      throw new Error(`${flag} must be a positive integer\n${USAGE}`);
    return value;
  };
  for (let index = 0; index < args.length; index++) {
    const flag = args[index]!;
    if (flag === '--orders') options.orders = count(flag, args[++index]);
    else if (flag === '--old-workers') options.oldWorkers = count(flag, args[++index]);
    else if (flag === '--new-workers') options.newWorkers = count(flag, args[++index]);
    else if (flag === '--seed') options.seed = count(flag, args[++index]);
    else if (flag === '--out') out = args[++index] ?? null;
    else if (flag === '--no-faults')
      options.faults = Object.fromEntries(Object.keys(options.faults).map((key) => [key, 0])) as never;
    else throw new Error(`unknown flag ${flag}\n${USAGE}`);
  }
  return { options, out };
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const say = (line: string): void => console.error(`[cutover] ${line}`);
  const report = await runCutover(parsed.options, say);
  const text = JSON.stringify(report, null, 2);
  console.log(text);
  if (parsed.out !== null) await writeFile(parsed.out, `${text}\n`);
  say(report.ok ? 'every invariant holds' : `INVARIANT FAILED: ${JSON.stringify(report.invariants)}`);
  return report.ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), 3_000).unref();
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
