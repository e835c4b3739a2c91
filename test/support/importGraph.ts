// The relative imports between a tree's TypeScript files, and the circles among them. Type-only imports and
// re-exports count: a circle of types still means neither file can be read without the other.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** File (relative to the root) → the files it imports. */
export type ImportGraph = Map<string, string[]>;

export function importGraphOf(root: string): ImportGraph {
  const files = listTs(root);
  const known = new Set(files);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const imports = ts.preProcessFile(text, true, true).importedFiles.map((entry) => entry.fileName);
    const targets = imports
      .filter((name) => name.startsWith('.'))
      .map((name) => resolveTs(resolve(dirname(file), name), known))
      .filter((target): target is string => target !== null);
    graph.set(relative(root, file), [...new Set(targets.map((target) => relative(root, target)))]);
  }
  return graph;
}

/** Each group of files that import one another round a circle (strongly connected, two or more), sorted. */
export function importCircles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm: one pass, each file visited once.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) circles.push(group.sort());
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return circles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

function listTs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : listTs(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** './x', './x.js' or './dir' as the file it names, if it is one of ours. */
function resolveTs(base: string, known: Set<string>): string | null {
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${stem}.ts`, join(stem, 'index.ts')]) if (known.has(candidate)) return candidate;
  return null;
}
