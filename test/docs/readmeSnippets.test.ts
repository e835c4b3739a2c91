// The TypeScript a README shows an order service compiles against the client it describes: each ```ts block of
// README.md and packages/client/README.md, with `@order-confirmation-mail/client` resolved to src/client.ts
// (what the package is built from) and the order id the snippet takes as given.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');
const GIVEN = 'declare const orderId: string;\n';

function snippets(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

const READMES = ['README.md', 'packages/client/README.md'];

/** One snippet's file: an ES module of this project beside this test, named after its README and place. */
function snippetFile(readme: string, index: number): string {
  return path.join(ROOT, 'test', 'docs', `__readmeSnippet-${readme.replace(/\W+/g, '-')}-${index}.mts`);
}

let compiled: Map<string, string[]> | undefined;

/**
 * The compiler's complaints about each snippet of every README (none when it compiles), by snippet file: one
 * program holds them all, so the client and the libraries are parsed and checked once, not once per snippet.
 */
function complaintsBySnippet(): Map<string, string[]> {
  if (compiled !== undefined) return compiled;
  const sources = new Map<string, string>();
  for (const readme of READMES) {
    snippets(readme).forEach((source, index) => sources.set(snippetFile(readme, index), GIVEN + source));
  }
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (name) => ts.sys.readFile(name));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  options.paths = { '@order-confirmation-mail/client': [path.join(ROOT, 'src', 'client.ts')] };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => sources.get(path.resolve(name)) ?? readFile(name);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => sources.has(path.resolve(name)) || fileExists(name);
  const program = ts.createProgram([...sources.keys()], options, host);
  compiled = new Map(
    [...sources.keys()].map((file) => [
      file,
      ts
        .getPreEmitDiagnostics(program, program.getSourceFile(file))
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')),
    ]),
  );
  return compiled;
}

for (const readme of READMES) {
  it(`${readme}: every TypeScript snippet compiles against the client`, () => {
    const blocks = snippets(readme);
    expect(blocks.length).toBeGreaterThan(0);
    const complaints = complaintsBySnippet();
    expect(blocks.map((_, index) => complaints.get(snippetFile(readme, index)))).toEqual(
      blocks.map(() => []),
    );
  }, 60_000);
}
