// Builds the package from the repository's own src/client.ts (the one place the client's code lives):
// esbuild bundles it with what it imports from src/ into one ES module and one CommonJS file, the
// dependencies left as imports; tsc writes its declarations, and a .d.mts twin of each serves ESM consumers
// (whose resolution wants explicit extensions).
import { execFileSync } from 'node:child_process';
import process from 'node:process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, 'dist');
const pkg = JSON.parse(readFileSync(path.join(here, 'package.json'), 'utf8'));
const entry = path.join(here, '..', '..', 'src', 'client.ts');
// Temporal's packages are peers the order service brings (its own Client passes in), so they stay imports;
// the optional one (tracing: true) is loaded only by a client that traces.
const external = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];

rmSync(dist, { recursive: true, force: true });
for (const [format, file] of [
  ['esm', 'index.mjs'],
  ['cjs', 'index.cjs'],
]) {
  await build({
    entryPoints: [entry],
    outfile: path.join(dist, file),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format,
    external,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
}

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(here, 'tsconfig.json')], { stdio: 'inherit' });
writeFileSync(path.join(dist, 'index.d.ts'), "export * from './types/client';\n");
// ESM twins: the same declarations with './x' specifiers spelled './x.mjs'.
for (const file of readdirSync(path.join(dist, 'types'), { recursive: true })) {
  if (!String(file).endsWith('.d.ts')) continue;
  const source = path.join(dist, 'types', String(file));
  const text = readFileSync(source, 'utf8').replace(/(from '\.{1,2}\/[^']+)'/g, "$1.mjs'");
  writeFileSync(source.replace(/\.d\.ts$/, '.d.mts'), text);
}
writeFileSync(path.join(dist, 'index.d.mts'), "export * from './types/client.mjs';\n");
