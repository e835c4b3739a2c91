// Workflow code and the shared modules it imports throw only ApplicationFailures: an Error fails the workflow
// task, which Temporal retries forever. The lint rule says so (eslint.config.mjs); this checks that it catches
// such a throw, that it covers every src/shared module the workflows reach, and that src/ obeys it.
import { join } from 'node:path';
import { ESLint, Linter } from 'eslint';
import { describe, expect, it } from 'vitest';
import { importGraphOf } from '../support/importGraph';

const REPO = join(__dirname, '..', '..');
const RULE = 'no-restricted-syntax';

/** src/workflows/ and every src/shared module reachable from it (types included), relative to the repo. */
function workflowFiles(): string[] {
  const graph = importGraphOf(join(REPO, 'src'));
  const inScope = (file: string) => file.startsWith('workflows/') || file.startsWith('shared/');
  const seen = new Set([...graph.keys()].filter((file) => file.startsWith('workflows/')));
  for (const file of seen) for (const next of graph.get(file) ?? []) if (inScope(next)) seen.add(next);
  return [...seen].map((file) => `src/${file}`).sort();
}

async function ruleFor(file: string): Promise<Linter.RuleEntry | undefined> {
  const config = (await new ESLint({ cwd: REPO }).calculateConfigForFile(file)) as Linter.Config;
  return config.rules?.[RULE];
}

describe('workflow code throws only ApplicationFailures', () => {
  it('the rule flags a thrown Error and its kin, not an ApplicationFailure or a rethrow', async () => {
    const entry = await ruleFor('src/workflows/orderConfirmationMail.ts');
    expect(entry).toBeDefined();
    const flagged = (code: string) =>
      new Linter({ configType: 'flat' })
        .verify(code, [{ rules: { [RULE]: entry! } }])
        .filter((message) => message.ruleId === RULE).length;
    expect(flagged("throw new Error('unreachable');")).toBe(1);
    expect(flagged("throw Error('unreachable');")).toBe(1);
    expect(flagged("throw new TypeError('x'); throw new RangeError('y');")).toBe(2);
    expect(flagged("throw ApplicationFailure.create({ type: 'X', nonRetryable: true });")).toBe(0);
    expect(flagged('try { f(); } catch (error) { throw error; }')).toBe(0);
  });

  it('covers src/workflows/ and every src/shared module the workflows import', async () => {
    const files = workflowFiles();
    expect(files).toContain('src/shared/unknownOutcome.ts');
    const uncovered: string[] = [];
    for (const file of files) if ((await ruleFor(file)) === undefined) uncovered.push(file);
    expect(uncovered).toEqual([]);
  });

  it('src/ obeys it', async () => {
    // This rule alone, which needs no type information: the other rules' type-checked program is most of a
    // full lint's time, and their messages are not this test's.
    const eslint = new ESLint({
      cwd: REPO,
      ruleFilter: ({ ruleId }) => ruleId === RULE,
      overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
    });
    const results = await eslint.lintFiles(workflowFiles());
    const broken = results.flatMap((result) =>
      result.messages
        .filter((message) => message.ruleId === RULE)
        .map((message) => `${result.filePath.slice(REPO.length + 1)}:${message.line}`),
    );
    expect(broken).toEqual([]);
  });
});
