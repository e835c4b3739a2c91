// What the READMEs (README.md, packages/client/README.md) say in TypeScript holds for the client they describe:
// - each ```ts block compiles, with `@order-confirmation-mail/client` resolved to src/client.ts (what the
//   package is built from) and the order id the snippet takes as given;
// - the start's result type as each README prints it ("// StartResult:" comment lines) is exactly the
//   StartResult src/client.ts returns.
// One TypeScript program holds every check of both, so the client and its libraries are parsed and checked once
// for the file; each check reads its own file's diagnostics.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');
const READMES = ['README.md', 'packages/client/README.md'];
const GIVEN = 'declare const orderId: string;\n';

function snippets(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/** The union the README writes after "// StartResult:", one "//   | {...}" line per member ('' if none). */
function readmeStartResult(file: string): string {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const at = lines.findIndex((line) => line.trim() === '// StartResult:');
  if (at < 0) return '';
  const members: string[] = [];
  for (const line of lines.slice(at + 1)) {
    const member = /^\/\/\s+(\|.*)$/.exec(line.trim());
    if (member === null) break;
    members.push(member[1]!);
  }
  return members.join('\n');
}

const fileName = (readme: string) => readme.replace(/\W+/g, '-');

/** One snippet's file: an ES module of this project beside this test, named after its README and place. */
function snippetFile(readme: string, index: number): string {
  return path.join(ROOT, 'test', 'docs', `__readmeSnippet-${fileName(readme)}-${index}.mts`);
}

/** The file that checks a README's StartResult against the real one. */
function startResultFile(readme: string): string {
  return path.join(ROOT, 'test', 'docs', `__readmeStartResult-${fileName(readme)}.ts`);
}

function startResultCheck(readme: string): string {
  return `import type { StartResult } from '../../src/client';
type Readme = ${readmeStartResult(readme)};
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export const same: Same<StartResult, Readme> = true;
`;
}

let compiled: Map<string, string[]> | undefined;

/** The compiler's complaints about each file of the program (none when it compiles), by file. */
function complaintsByFile(): Map<string, string[]> {
  if (compiled !== undefined) return compiled;
  const sources = new Map<string, string>();
  for (const readme of READMES) {
    snippets(readme).forEach((source, index) => sources.set(snippetFile(readme, index), GIVEN + source));
    sources.set(startResultFile(readme), startResultCheck(readme));
  }
  // The project's own compiler options (tsconfig.json), so the check is the typecheck's; the path mapping is the
  // snippets' only (the StartResult checks import src/client.ts by its relative path).
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
    const complaints = complaintsByFile();
    expect(blocks.map((_, index) => complaints.get(snippetFile(readme, index)))).toEqual(
      blocks.map(() => []),
    );
  }, 60_000);

  it(`${readme}: the start's result type is the one startOrderConfirmationMail returns`, () => {
    expect(readmeStartResult(readme), `${readme} has no "// StartResult:" union`).not.toBe('');
    expect(complaintsByFile().get(startResultFile(readme))).toEqual([]);
  }, 60_000);
}
