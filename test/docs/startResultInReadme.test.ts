// The start's result type as the READMEs print it is the type src/client.ts returns: each README's
// "// StartResult:" comment lines are compiled against the real StartResult, and must be the same type.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');

/** The union the README writes after "// StartResult:", one "//   | {...}" line per member. */
function readmeStartResult(file: string): string {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const at = lines.findIndex((line) => line.trim() === '// StartResult:');
  expect(at, `${file} has no "// StartResult:" comment`).toBeGreaterThanOrEqual(0);
  const members: string[] = [];
  for (const line of lines.slice(at + 1)) {
    const member = /^\/\/\s+(\|.*)$/.exec(line.trim());
    if (member === null) break;
    members.push(member[1]!);
  }
  return members.join('\n');
}

const READMES = ['README.md', 'packages/client/README.md'];

let compiled: Map<string, string[]> | undefined;

/**
 * TypeScript's complaints about each README's type that is not exactly StartResult (none when it is), by
 * README: one program holds every README's check, so the client and the libraries are checked once.
 */
function differencesByReadme(): Map<string, string[]> {
  if (compiled !== undefined) return compiled;
  const files = new Map(
    READMES.map((readme) => [
      readme,
      path.join(ROOT, 'test', 'docs', `__readmeStartResult-${readme.replace(/\W+/g, '-')}.ts`),
    ]),
  );
  const sources = new Map(
    READMES.map((readme) => [
      files.get(readme)!,
      `import type { StartResult } from '../../src/client';
type Readme = ${readmeStartResult(readme)};
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export const same: Same<StartResult, Readme> = true;
`,
    ]),
  );
  // The project's own compiler options (tsconfig.json), so the check is the typecheck's.
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (name) => ts.sys.readFile(name));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => sources.get(path.resolve(name)) ?? readFile(name);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => sources.has(path.resolve(name)) || fileExists(name);
  const program = ts.createProgram([...sources.keys()], options, host);
  compiled = new Map(
    READMES.map((readme) => [
      readme,
      ts
        .getPreEmitDiagnostics(program, program.getSourceFile(files.get(readme)!))
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')),
    ]),
  );
  return compiled;
}

for (const readme of READMES) {
  it(`${readme}: the start's result type is the one startOrderConfirmationMail returns`, () => {
    const readmeType = readmeStartResult(readme);
    expect(readmeType).not.toBe('');
    expect(differencesByReadme().get(readme)).toEqual([]);
  }, 60_000);
}
