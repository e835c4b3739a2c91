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

/** TypeScript's complaints about a README type that is not exactly StartResult (none when it is). */
function differences(readmeType: string): string[] {
  const file = path.join(ROOT, 'test', 'docs', '__readmeStartResult.ts');
  const source = `import type { StartResult } from '../../src/client';
type Readme = ${readmeType};
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export const same: Same<StartResult, Readme> = true;
`;
  // The project's own compiler options (tsconfig.json), so the check is the typecheck's.
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (name) => ts.sys.readFile(name));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (path.resolve(name) === file ? source : readFile(name));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}

for (const readme of ['README.md', 'packages/client/README.md']) {
  it(`${readme}: the start's result type is the one startOrderConfirmationMail returns`, () => {
    const readmeType = readmeStartResult(readme);
    expect(readmeType).not.toBe('');
    expect(differences(readmeType)).toEqual([]);
  }, 60_000);
}
