// The sandbox is an oracle: it judges the product's sends, lookups and webhook handling, so it may not be
// built from the product's code (a shared bug would then agree with itself). Every import of the package
// stays in the package, or names Node or a package its package.json declares.
import { globSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { expect, it } from 'vitest';

const PACKAGE = path.join(__dirname, '..');
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm;

interface Manifest {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function versions(folder: string): Record<string, string> {
  const manifest = JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8')) as Manifest;
  return { ...manifest.dependencies, ...manifest.devDependencies };
}

function declared(): Set<string> {
  return new Set(Object.keys(versions(PACKAGE)));
}

/** A bare specifier's package: `@scope/name` or `name`, without a subpath. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

it('imports nothing from outside the package but Node and its declared packages', () => {
  const files = globSync('{src,test}/**/*.{ts,mts}', { cwd: PACKAGE }).concat('vitest.config.mts');
  expect(files.length).toBeGreaterThan(30);
  const packages = declared();
  const strays: string[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(PACKAGE, file), 'utf8');
    for (const [, specifier] of text.matchAll(IMPORT)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) {
        const target = path.relative(PACKAGE, path.resolve(PACKAGE, path.dirname(file), specifier));
        if (target.startsWith('..')) strays.push(`${file}: ${specifier}`);
      } else if (specifier.startsWith('node:')) {
        if (!builtinModules.includes(specifier.slice('node:'.length))) strays.push(`${file}: ${specifier}`);
      } else if (!packages.has(packageOf(specifier))) {
        strays.push(`${file}: ${specifier}`);
      }
    }
  }
  expect(strays).toEqual([]);
});

it("declares the repository's own versions of what it uses, so the workspace installs one copy of each", () => {
  const repository = versions(path.join(PACKAGE, '..', '..'));
  const differing = Object.entries(versions(PACKAGE)).filter(
    ([name, version]) => repository[name] !== version,
  );
  expect(differing).toEqual([]);
});
