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

/** The compiler's complaints about `source` as an ES module of this project (none when it compiles). */
function complaints(source: string, index: number): string[] {
  const file = path.join(ROOT, 'test', 'docs', `__readmeSnippet${index}.mts`);
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (name) => ts.sys.readFile(name));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  options.paths = { '@order-confirmation-mail/client': [path.join(ROOT, 'src', 'client.ts')] };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (path.resolve(name) === file ? GIVEN + source : readFile(name));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}

for (const readme of ['README.md', 'packages/client/README.md']) {
  it(`${readme}: every TypeScript snippet compiles against the client`, () => {
    const blocks = snippets(readme);
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.map((block, index) => complaints(block, index))).toEqual(blocks.map(() => []));
  }, 60_000);
}
