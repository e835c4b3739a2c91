// Every Markdown file of the repository links only to what a clone has: a relative link to a missing file or
// to a heading that is not there fails, and so does any link or path that leaves the repository (the team's
// shared folder, a machine's /work or /home). The rules are checked on small cases first, so a checker that
// silently finds nothing cannot pass.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  anchorsOf,
  checkMarkdownFile,
  docPagesNamedIn,
  githubSlug,
  headingPlainText,
  linksOf,
} from './markdownLinks';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** The repository's files, tracked ones and new ones not ignored, as they are in the work tree. */
function repositoryFiles(...pathspecs: string[]): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', ...pathspecs],
    {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    },
  );
  return [...new Set(listed.split('\0').filter((file) => file !== ''))]
    .filter((file) => existsSync(path.join(REPO_ROOT, file)))
    .sort();
}

describe('GitHub heading anchors', () => {
  it.each([
    ['How it works', 'how-it-works'],
    ['Over SMTP', 'over-smtp'],
    ['The CLI: `npm run ops`', 'the-cli-npm-run-ops'],
    ['G1 — no duplicate by our doing', 'g1--no-duplicate-by-our-doing'],
    ['`order_mail_log`, the source of truth', 'order_mail_log-the-source-of-truth'],
    ['1. The problem (seed)', '1-the-problem-seed'],
    ['ご注文ありがとうございます', 'ご注文ありがとうございます'],
    ['Send rate: `MAIL_SEND_RATE_LIMIT_PER_SECOND`', 'send-rate-mail_send_rate_limit_per_second'],
  ])('%s → #%s', (heading, slug) => {
    expect(githubSlug(headingPlainText(heading))).toBe(slug);
  });

  it('numbers repeated headings as GitHub does, and ignores headings inside code', () => {
    const anchors = anchorsOf('# Results\n## Results\n```\n# not a heading\n```\n### Results ###\n');
    expect([...anchors]).toEqual(['results', 'results-1', 'results-2']);
  });
});

describe('link extraction', () => {
  it('finds inline links, images, definitions and HTML, but nothing in code', () => {
    const markdown = [
      'See [the design](docs/design.md#guarantees) and ![a shot](shots/a.png "title").',
      '[`deploy/stack.env`](deploy/stack.env) `[not](a-link.md)`',
      '[ref]: ../elsewhere.md',
      '<img src="x.svg"> <a href="https://example.com">web</a>',
      '```md',
      '[inside a fence](nope.md)',
      '```',
    ].join('\n');
    expect(linksOf(markdown)).toEqual([
      { line: 1, target: 'docs/design.md#guarantees' },
      { line: 1, target: 'shots/a.png' },
      { line: 2, target: 'deploy/stack.env' },
      { line: 3, target: '../elsewhere.md' },
      { line: 4, target: 'x.svg' },
      { line: 4, target: 'https://example.com' },
    ]);
  });
});

describe('docs pages named in code', () => {
  it('finds docs/….md paths, not longer paths that merely contain one', () => {
    const text =
      '// see docs/benchmarks.md and (docs/readme/providers.md#x).\n// not dev/docs/x.md, nor docs/a.mdx';
    expect(docPagesNamedIn(text)).toEqual([
      { line: 1, target: 'docs/benchmarks.md' },
      { line: 1, target: 'docs/readme/providers.md' },
    ]);
  });
});

describe('checking a file', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'links-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'docs'));
  writeFileSync(path.join(root, 'docs', 'page.md'), '# Page\n## Over SMTP\n');

  it('reports every kind of broken link, and accepts the good ones', () => {
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '# Top',
        '[ok](docs/page.md) [ok](docs/page.md#over-smtp) [ok](#top) [ok](docs) [web](https://example.com)',
        '[gone](docs/missing.md)',
        '[no anchor](docs/page.md#over-http)',
        '[up and out](../shared/docs/DESIGN.md)',
        '[absolute](/work/main/README.md)',
        'Sources: `shared/docs/research/temporal.md`, and /home/someone/notes.',
      ].join('\n'),
    );
    const problems = checkMarkdownFile(root, 'README.md').map(({ line, problem }) => `${line}: ${problem}`);
    expect(problems).toEqual([
      '3: docs/missing.md: no such file or directory (docs/missing.md)',
      '4: docs/page.md#over-http: docs/page.md has no heading with the anchor #over-http',
      '5: ../shared/docs/DESIGN.md: points outside the repository',
      '6: /work/main/README.md: an absolute path; link relative to this file instead',
      '5: ../shared/docs/DESIGN.md: names a path outside the repository',
      '6: /work/main/README.md: names a path outside the repository',
      '7: shared/docs/research/temporal.md: names a path outside the repository',
      '7: /home/someone/notes: names a path outside the repository',
    ]);
  });
});

describe('the repository', () => {
  const files = repositoryFiles('*.md');

  it('has Markdown files to check', () => {
    expect(files).toContain('README.md');
  });

  it.each(files)('%s: every relative link resolves inside the repository', (file) => {
    const problems = checkMarkdownFile(REPO_ROOT, file).map(
      ({ line, problem }) => `${file}:${line}: ${problem}`,
    );
    expect(problems).toEqual([]);
  });

  it('names only docs pages that exist, in code and configuration too', () => {
    // This folder's own tests name missing pages on purpose; images and recorded data name none.
    const texts = repositoryFiles(':!test/docs/**', ':!*.png', ':!*.svg', ':!test/replay/histories/**');
    const missing = texts.flatMap((file) =>
      docPagesNamedIn(readFileSync(path.join(REPO_ROOT, file), 'utf8'))
        .filter(({ target }) => !existsSync(path.join(REPO_ROOT, target)))
        .map(({ line, target }) => `${file}:${line}: ${target} does not exist`),
    );
    expect(missing).toEqual([]);
  });
});
