// `npm run demo` and `npm run chaos`: see dev/demo/runner.ts and docs/demo-and-chaos.md.
import { parseRunOptions, UsageError } from '../demo/options';
import { runDemo } from '../demo/runner';
import { USAGE } from '../demo/usage';

async function main(): Promise<number> {
  let options;
  try {
    options = parseRunOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  return runDemo(options);
}

main().then(
  (code) => {
    // Let stdout drain (a --json report may go to a pipe), but do not wait on a straggling handle.
    process.exitCode = code;
    setTimeout(() => process.exit(code), 3_000).unref();
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
