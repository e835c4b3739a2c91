// The workflow's step table is exhaustive by its type: a step kind without its row is a compile error. The
// fixture says so with `@ts-expect-error`, which is itself an error once the table stops demanding the row.
import { join } from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const REPO = join(__dirname, '..', '..');

it('a new step kind without its row in the step table does not compile', () => {
  const read = ts.readConfigFile(join(REPO, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  const { options } = ts.parseJsonConfigFileContent(read.config as object, ts.sys, REPO);
  const compilerOptions = { ...options, noEmit: true };
  // As tsc reads: doc comments parsed only where they carry types. The workflow's imports reach 1,180 files
  // (8.8 MB of Temporal's protobuf declarations among them), and their comments were most of the parse.
  const host = ts.createCompilerHost(compilerOptions);
  host.jsDocParsingMode = ts.JSDocParsingMode.ParseForTypeErrors;
  const program = ts.createProgram({
    rootNames: [join(__dirname, 'stepTableFixture.ts')],
    options: compilerOptions,
    host,
  });
  const errors = ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  expect(errors).toEqual([]);
});
