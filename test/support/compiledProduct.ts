// The product compiled once per test run, for the tests that run a worker as its own process
// (test/support/workerProcess.ts): each file of src/ compiled to CommonJS by esbuild, as tsx compiles it on
// the fly, and the files `npm run build` copies beside the code, run with plain `node` as `npm start` runs
// dist/worker.js. tsx's loader cost each start about a CPU second; this costs well under one for the run.
// No type-checking here: `npm run typecheck` does it, and test/build/ tries the real `npm run build`.
import { cp, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

export interface CompiledProduct {
  /** The folder holding dist/ (and a link to the checkout's node_modules, which dist/ resolves through). */
  directory: string;
  remove(): Promise<void>;
}

export async function compileProduct(root: string): Promise<CompiledProduct> {
  const directory = await mkdtemp(path.join(tmpdir(), 'compiled-product-'));
  const remove = () => rm(directory, { recursive: true, force: true });
  try {
    await symlink(path.join(root, 'node_modules'), path.join(directory, 'node_modules'), 'dir');
    const src = path.join(root, 'src');
    const dist = path.join(directory, 'dist');
    const sources = (await readdir(src, { recursive: true }))
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
      .map((file) => path.join(src, file));
    await build({
      entryPoints: sources,
      outbase: src,
      outdir: dist,
      bundle: false,
      platform: 'node',
      format: 'cjs',
      target: 'node24',
      tsconfig: path.join(root, 'tsconfig.build.json'),
      logLevel: 'warning',
    });
    // What the build copies next to the code that reads it: the migrations, the queries, the templates.
    await cp(src, dist, { recursive: true, filter: (source) => !source.endsWith('.ts') });
  } catch (error) {
    await remove().catch(() => undefined);
    throw error;
  }
  return { directory, remove };
}
