// Slims a production install (`npm ci --omit=dev`) to what the worker image runs, for one architecture:
//
//   node scripts/prune-image-modules.mjs <app dir> <amd64|arm64>
//
// The Dockerfile runs it on its dependencies stage (docs/production.md, "The image"). What goes:
// - the Temporal core bridge's native modules for every other platform (macOS, Windows, the other Linux
//   architecture) and its Rust sources: the image loads releases/<its target>/index.node alone;
// - the workflow bundler's toolchain (webpack, swc, their loaders, memfs/unionfs) and every package only they
//   need: the image runs the bundle made at build time (WORKFLOW_BUNDLE_PATH). @temporalio/worker still
//   requires them when it loads, so each becomes a stub that throws, naming why, if anything ever calls it;
// - type declarations and source maps, which nothing reads at run time.
// The app's own dependency graph (its package.json, node_modules/.package-lock.json) decides what stays:
// a package goes only when nothing the app needs reaches it except through the cut edges.
// Plain Node, no dependencies: it runs in the image's build stage. test/stack/imageModules.test.ts runs it on
// a copy of a production install and starts the worker and every documented feature from the result.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';

// Docker's TARGETARCH → the core bridge's release folder (Linux, glibc: the image is Debian).
const BRIDGE_TARGETS = { amd64: 'x86_64-unknown-linux-gnu', arm64: 'aarch64-unknown-linux-gnu' };

// What only the workflow bundler (bundleWorkflowCode) uses: required when @temporalio/worker loads, never
// called with a prebuilt bundle.
export const BUNDLER_ONLY = ['webpack', '@swc/core', 'swc-loader', 'source-map-loader', 'memfs', 'unionfs'];

const STUB = (name) => `'use strict';
// A stub left by scripts/prune-image-modules.mjs: ${name} bundles workflow code, which this image never does
// (it runs the prebuilt bundle, WORKFLOW_BUNDLE_PATH). Loading it is fine; using it throws.
const fail = () => {
  throw new Error(
    '${name} is not in this image: the worker runs its prebuilt workflow bundle. Set WORKFLOW_BUNDLE_PATH ' +
      '(the image sets /app/dist/workflow-bundle.js); bundling at start-up needs a full install.',
  );
};
module.exports = new Proxy(fail, {
  get(target, property) {
    if (property === '__esModule') return true;
    if (typeof property === 'symbol' || property === 'then') return undefined;
    return fail;
  },
  apply: fail,
  construct: fail,
});
`;

function sizeOf(target) {
  const stat = statSync(target, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(target).reduce((sum, entry) => sum + sizeOf(path.join(target, entry)), 0);
}

/** The installed paths (node_modules/a, node_modules/a/node_modules/b) the app reaches, skipping `cut`. */
function reachable(lock, rootDependencies, cut) {
  const packages = lock.packages;
  // Node's lookup: the nearest node_modules/<name> from the requiring package upwards.
  const resolve = (from, name) => {
    let base = from;
    for (;;) {
      const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
      if (candidate in packages) return candidate;
      if (base === '') return null;
      const index = base.lastIndexOf('/node_modules/');
      base = index === -1 ? '' : base.slice(0, index);
    }
  };
  const seen = new Set();
  const queue = rootDependencies.map((name) => ['', name]);
  while (queue.length > 0) {
    const [from, name] = queue.pop();
    if (cut.includes(name)) continue;
    const found = resolve(from, name);
    if (found === null || seen.has(found)) continue;
    seen.add(found);
    const entry = packages[found];
    for (const dependency of Object.keys({
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...entry.peerDependencies,
    })) {
      queue.push([found, dependency]);
    }
  }
  return seen;
}

function removeFiles(directory, test, removed) {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) removeFiles(full, test, removed);
    else if (test(entry.name)) {
      removed.bytes += statSync(full).size;
      rmSync(full);
    }
  }
}

export function pruneImageModules(appDirectory, arch) {
  const target = BRIDGE_TARGETS[arch];
  if (target === undefined)
    throw new Error(`arch must be one of ${Object.keys(BRIDGE_TARGETS).join(', ')} (got ${arch})`);
  const modules = path.join(appDirectory, 'node_modules');
  const before = sizeOf(modules);
  const lock = JSON.parse(readFileSync(path.join(modules, '.package-lock.json'), 'utf8'));
  const app = JSON.parse(readFileSync(path.join(appDirectory, 'package.json'), 'utf8'));

  // 1. Packages nothing reaches but through the bundler: gone. The bundler's entry points: stubs.
  const keep = reachable(lock, Object.keys(app.dependencies ?? {}), BUNDLER_ONLY);
  const unreached = Object.keys(lock.packages).filter(
    (installed) => installed !== '' && !keep.has(installed),
  );
  // Deepest first, so a nested package is not visited after its parent went.
  for (const installed of unreached.sort((a, b) => b.length - a.length)) {
    rmSync(path.join(appDirectory, installed), { recursive: true, force: true });
  }
  for (const name of BUNDLER_ONLY) {
    const directory = path.join(modules, name);
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory, { recursive: true });
    writeFileSync(
      path.join(directory, 'package.json'),
      `${JSON.stringify({ name, version: '0.0.0-stub', main: 'index.js' })}\n`,
    );
    writeFileSync(path.join(directory, 'index.js'), STUB(name));
  }

  // 2. The core bridge: this architecture's native module and the JavaScript that loads it.
  const bridge = path.join(modules, '@temporalio', 'core-bridge');
  if (!existsSync(path.join(bridge, 'releases', target, 'index.node'))) {
    throw new Error(`@temporalio/core-bridge has no release for ${target}: not a full install?`);
  }
  for (const release of readdirSync(path.join(bridge, 'releases'))) {
    if (release !== target) rmSync(path.join(bridge, 'releases', release), { recursive: true, force: true });
  }
  for (const source of ['sdk-core', 'src', 'bridge-macros', 'ts', 'scripts', 'Cargo.toml', 'Cargo.lock']) {
    rmSync(path.join(bridge, source), { recursive: true, force: true });
  }

  // 3. Type declarations and source maps: nothing reads them at run time. Nor the .bin links (some dangle now).
  rmSync(path.join(modules, '@types'), { recursive: true, force: true });
  rmSync(path.join(modules, '.bin'), { recursive: true, force: true });
  removeFiles(modules, (name) => /\.d\.[cm]?ts$|\.map$/.test(name), { bytes: 0 });

  return { before, after: sizeOf(modules), removedPackages: unreached.length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [appDirectory, arch] = process.argv.slice(2);
  if (appDirectory === undefined || arch === undefined) {
    process.stderr.write('usage: node scripts/prune-image-modules.mjs <app dir> <amd64|arm64>\n');
    process.exit(2);
  }
  const { before, after, removedPackages } = pruneImageModules(appDirectory, arch);
  const mb = (bytes) => (bytes / 1e6).toFixed(1);
  process.stdout.write(
    `node_modules for ${arch}: ${mb(before)} MB → ${mb(after)} MB (${removedPackages} packages removed)\n`,
  );
}
