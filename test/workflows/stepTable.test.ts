// The workflow's step table is exhaustive by its type: a step kind without its row is a compile error. The
// fixture says so with `@ts-expect-error`, which is itself an error once the table stops demanding the row.
import { join } from 'node:path';
import ts from 'typescript';
import { expect, it } from 'vitest';

const REPO = join(__dirname, '..', '..');

it('a new step kind without its row in the step table does not compile', () => {
  const read = ts.readConfigFile(join(REPO, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  const { options } = ts.parseJsonConfigFileContent(read.config as object, ts.sys, REPO);
  const program = ts.createProgram([join(__dirname, 'stepTableFixture.ts')], { ...options, noEmit: true });
  const errors = ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  expect(errors).toEqual([]);
});
