// One Node everywhere: deploy/stack.env's NODE_VERSION is the worker image's base (the Dockerfile's ARG,
// checked by test/stack/composeDrift.test.ts), the one scripts/setup.sh installs and scripts/with-node.sh runs
// the tests, the demo and the native stack's workers on; .nvmrc, `engines` and @types/node follow it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { loadStackSettings, PROJECT_ROOT } from '../../dev/stack/stackSettings';
import { MINIMUM_NODE_MAJOR, unsupportedNodeMessage } from '../../src/nodeGuard';

const { nodeVersion } = loadStackSettings();
const major = nodeVersion.split('.')[0];
const packageJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};

it('names the same Node in .nvmrc, engines and @types/node', () => {
  expect(major).toBe('24');
  expect(readFileSync(path.join(PROJECT_ROOT, '.nvmrc'), 'utf8').trim()).toBe(nodeVersion);
  expect(packageJson.engines.node).toBe(`>=${major}`);
  expect(packageJson.devDependencies['@types/node']?.split('.')[0]).toBe(major);
});

it('runs the tests on that Node (npm test goes through scripts/with-node.sh)', () => {
  expect(process.version).toBe(`v${nodeVersion}`);
});

it('the production commands refuse a Node older than engines says (src/nodeGuard.ts), and only those', () => {
  expect(String(MINIMUM_NODE_MAJOR)).toBe(major);
  expect(unsupportedNodeMessage('20.20.2', '/usr/bin/node')).toMatch(
    /needs Node 24 or later; this is Node v20\.20\.2 \(\/usr\/bin\/node\)/,
  );
  expect(unsupportedNodeMessage('23.11.0', 'node')).not.toBeNull();
  expect(unsupportedNodeMessage(nodeVersion, 'node')).toBeNull();
  expect(unsupportedNodeMessage('26.0.0', 'node')).toBeNull();
});
