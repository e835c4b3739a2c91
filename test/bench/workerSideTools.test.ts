// Smoke tests of the two tools that price the worker's side of product / card apart (docs/benchmarks.md): each
// runs end to end on a few calls and reports every variant or extra it measures.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { untracedBundlePathOf } from '../../src/tracing/workflowInterceptorModules';

const root = path.join(__dirname, '../..');
const run = (script: string, ...args: string[]) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    },
  });

describe("the worker's side tools", () => {
  it('workflowCost.ts replays each bundle and reports its bytes, modules and CPU per run', async () => {
    // The product's two bundles are the run's (built as src/cli/bundle-workflows.ts builds them): two webpack
    // builds fewer; the card's is bundled here.
    const bundle = inject('workflowBundlePath');
    const { stdout } = await run(
      'dev/bench/workflowCost.ts',
      ...['--replays', '2', '--rounds', '1', '--product-bundle', bundle],
    );
    const headers = [
      ...stdout.matchAll(/^(card|product untraced|product traced): (\d+) bytes, (\d+) modules(.*);/gm),
    ];
    expect(headers.map((match) => [match[1], match[4]])).toEqual([
      ['card', ''],
      ['product untraced', ` (${untracedBundlePathOf(bundle)})`],
      ['product traced', ` (${bundle})`],
    ]);
    // Each variant's header, then the modules it adds beside the SDK's, one a line.
    const listed = stdout.split(/^(?=card: |product untraced: |product traced: |CPU per replayed run)/m);
    const untraced = listed.find((part) => part.startsWith('product untraced: '))!;
    const traced = listed.find((part) => part.startsWith('product traced: '))!;
    expect(untraced).toContain('src/workflows/orderConfirmationMail.ts');
    expect(untraced).not.toContain('@opentelemetry');
    expect(traced).toContain('@opentelemetry');
    for (const name of ['card', 'product untraced', 'product traced']) {
      expect(stdout).toMatch(new RegExp(`^${name}: main thread \\d+ .*; in the workflow sandbox \\d+`, 'm'));
    }
    expect(stdout.match(/^ {2}per run: \d+ activations/gm)).toHaveLength(3);
  }, 180_000);

  it('activityExtrasCost.ts times every extra', async () => {
    const { stdout } = await run('dev/bench/activityExtrasCost.ts', '--calls', '200');
    expect(stdout.match(/^ +\d+\.\d\d {2}\S/gm)).toHaveLength(10);
  }, 60_000);
});
