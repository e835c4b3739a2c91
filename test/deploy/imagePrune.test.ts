// scripts/prune-image-modules.mjs on a made-up install: what the app reaches stays (nested copies included),
// what only the bundler reaches goes, the bundler's entry points become stubs, the core bridge keeps one
// architecture. The real install, run from the result: test/stack/imageModules.test.ts.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';

// An ES module (the image's build stage runs it with plain node), so imported dynamically.
let pruneImageModules: (
  appDirectory: string,
  arch: string,
) => { before: number; after: number; removedPackages: number };
beforeAll(async () => {
  ({ pruneImageModules } = await import('../../scripts/prune-image-modules.mjs'));
});

const ROOT = path.join(__dirname, '..', '..');
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

type Entry = { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };

function install(packages: Record<string, Entry>): string {
  const app = mkdtempSync(path.join(tmpdir(), 'prune-'));
  folders.push(app);
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({ dependencies: { '@temporalio/worker': '1', a: '1' } }),
  );
  for (const installed of Object.keys(packages)) {
    mkdirSync(path.join(app, installed), { recursive: true });
    writeFileSync(path.join(app, installed, 'index.js'), '');
    writeFileSync(path.join(app, installed, 'index.d.ts'), '');
  }
  for (const target of ['x86_64-unknown-linux-gnu', 'aarch64-unknown-linux-gnu', 'x86_64-apple-darwin']) {
    mkdirSync(path.join(app, 'node_modules/@temporalio/core-bridge/releases', target), { recursive: true });
    writeFileSync(path.join(app, 'node_modules/@temporalio/core-bridge/releases', target, 'index.node'), 'x');
  }
  mkdirSync(path.join(app, 'node_modules/@temporalio/core-bridge/sdk-core'), { recursive: true });
  writeFileSync(
    path.join(app, 'node_modules', '.package-lock.json'),
    JSON.stringify({ packages: { '': {}, ...packages } }),
  );
  return app;
}

const PACKAGES: Record<string, Entry> = {
  'node_modules/@temporalio/worker': {
    dependencies: { '@temporalio/core-bridge': '1', webpack: '5', memfs: '4', rxjs: '7' },
  },
  'node_modules/@temporalio/core-bridge': {},
  'node_modules/rxjs': { dependencies: { tslib: '2' } },
  'node_modules/tslib': {},
  'node_modules/webpack': { dependencies: { terser: '5', tslib: '2' } },
  'node_modules/terser': {},
  'node_modules/memfs': { dependencies: { '@jsonjoy.com/util': '1' } },
  'node_modules/@jsonjoy.com/util': {},
  'node_modules/a': { dependencies: { b: '2' } },
  // a's own b (nested); the top-level b is nobody's.
  'node_modules/a/node_modules/b': {},
  'node_modules/b': {},
};

it('keeps what the app reaches, drops what only the bundler reaches, stubs the bundler', () => {
  const app = install(PACKAGES);
  pruneImageModules(app, 'amd64');
  const modules = path.join(app, 'node_modules');
  for (const kept of ['@temporalio/worker', 'rxjs', 'tslib', 'a', 'a/node_modules/b']) {
    expect(existsSync(path.join(modules, kept, 'index.js')), kept).toBe(true);
  }
  for (const gone of ['terser', '@jsonjoy.com/util', 'b'])
    expect(existsSync(path.join(modules, gone)), gone).toBe(false);
  for (const stub of ['webpack', 'memfs']) {
    expect(readFileSync(path.join(modules, stub, 'index.js'), 'utf8')).toContain('is not in this image');
  }
  expect(readdirSync(path.join(modules, '@temporalio/core-bridge/releases'))).toEqual([
    'x86_64-unknown-linux-gnu',
  ]);
  expect(existsSync(path.join(modules, '@temporalio/core-bridge/sdk-core'))).toBe(false);
  expect(existsSync(path.join(modules, 'rxjs', 'index.d.ts'))).toBe(false);
});

it('keeps the arm64 module for arm64 and refuses an architecture it does not know', () => {
  const app = install(PACKAGES);
  pruneImageModules(app, 'arm64');
  expect(readdirSync(path.join(app, 'node_modules/@temporalio/core-bridge/releases'))).toEqual([
    'aarch64-unknown-linux-gnu',
  ]);
  expect(() => pruneImageModules(install(PACKAGES), 'riscv64')).toThrow(/arch must be one of amd64, arm64/);
});

it("the Dockerfile's dependencies stage runs it for the target architecture", () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  expect(dockerfile).toContain('ARG TARGETARCH');
  expect(dockerfile).toMatch(
    /npm ci --omit=dev[^\n]*\\\n\s*&& node \/tmp\/prune-image-modules\.mjs \/app "\$\{TARGETARCH/,
  );
});
