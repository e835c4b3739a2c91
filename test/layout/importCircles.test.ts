// No import circles in the product or its tooling (issue 23): each file can be read after the files it
// imports, and a leaf of types is where two modules meet. Circles were found in src/mail/providers/ (the
// table of facts and the adapters), dev/demo/ (the report and its sections) and dev/devtools/ (the dev server
// and its fallback) before this test.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCircles, importGraphOf } from '../support/importGraph';

const REPO = join(__dirname, '..', '..');

describe('import circles', () => {
  it.each(['src', 'dev', 'test', 'packages'])('%s/ holds none', (tree) => {
    expect(importCircles(importGraphOf(join(REPO, tree)))).toEqual([]);
  });

  it('the finder sees a circle of type-only imports and re-exports, through an index file', () => {
    const root = mkdtempSync(join(tmpdir(), 'circles-'));
    mkdirSync(join(root, 'lib'));
    writeFileSync(join(root, 'a.ts'), "import type { B } from './lib';\nexport type A = B;\n");
    writeFileSync(join(root, 'lib', 'index.ts'), "export { type B } from './b.js';\n");
    writeFileSync(join(root, 'lib', 'b.ts'), "import type { A } from '../a';\nexport type B = A | 1;\n");
    writeFileSync(join(root, 'leaf.ts'), "import type { A } from './a';\nexport type L = A;\n");
    expect(importCircles(importGraphOf(root))).toEqual([['a.ts', 'lib/b.ts', 'lib/index.ts']]);
  });
});
