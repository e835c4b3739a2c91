// Reads the links out of Markdown files and checks them against the repository, for test/docs/links.test.ts.
// Not a Markdown parser: it knows the few constructs the repository's docs use (inline links and images,
// reference definitions, HTML href/src, ATX headings, fenced code) and says so where it stops.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export interface MarkdownLink {
  line: number;
  target: string;
}

export interface LinkProblem {
  file: string;
  line: number;
  problem: string;
}

// GitHub's heading anchors (github-slugger): lower-case, then drop every character of these Unicode general
// categories except letters that are also Alphabetic, the space and the ASCII hyphen, then each space → '-'.
// Kept: letters, marks, decimal and letter numbers, connector punctuation ('_').
const SLUG_DROPPED =
  /(?![ -])(?!\p{Alphabetic})[\p{No}\p{Pd}\p{Ps}\p{Pe}\p{Pi}\p{Pf}\p{Po}\p{S}\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Z}]/gu;

export function githubSlug(headingText: string): string {
  return headingText.toLowerCase().replace(SLUG_DROPPED, '').replace(/ /g, '-');
}

/** The text GitHub renders for a heading's inline Markdown: code spans, links, emphasis and tags unwrapped. */
export function headingPlainText(markdown: string): string {
  return markdown
    .replace(/`+([^`]*?)`+/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\*\*|__|\*|~~/g, '')
    .trim();
}

/** Anchors a Markdown file offers: one per ATX heading (deduplicated as GitHub does), plus HTML ids/names. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(text);
    if (heading) {
      const base = githubSlug(headingPlainText(heading[1]!));
      let slug = base;
      while (seen.has(slug)) {
        const count = seen.get(base)! + 1;
        seen.set(base, count);
        slug = `${base}-${count}`;
      }
      seen.set(slug, 0);
      anchors.add(slug);
    }
    for (const html of text.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) anchors.add(html[1]!);
  }
  return anchors;
}

/** Every link target in the file, outside fenced code and code spans, with its line number. */
export function linksOf(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text } of proseLines(markdown)) {
    // A code span may sit inside a link's text (`[`x`](y)`), so it becomes a placeholder, not nothing.
    const prose = text.replace(/(`+)[^`]*?\1/g, 'code');
    for (const inline of prose.matchAll(/!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ line, target: inline[1]!.replace(/^<|>$/g, '') });
    }
    const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(prose);
    if (definition) links.push({ line, target: definition[1]!.replace(/^<|>$/g, '') });
    for (const html of prose.matchAll(/<(?:a|img)\s[^>]*\b(?:href|src)="([^"]+)"/g)) {
      links.push({ line, target: html[1]! });
    }
  }
  return links;
}

/** Lines outside fenced code blocks (``` or ~~~), numbered from 1. */
function proseLines(markdown: string): { line: number; text: string }[] {
  const lines: { line: number; text: string }[] = [];
  let fence: string | null = null;
  markdown.split('\n').forEach((text, index) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence === null && marker !== undefined) fence = marker;
    else if (
      fence !== null &&
      marker !== undefined &&
      marker[0] === fence[0] &&
      marker.length >= fence.length
    )
      fence = null;
    else if (fence === null) lines.push({ line: index + 1, text });
  });
  return lines;
}

// Paths that can only mean a place outside a clone of this repository: a machine's own directories, and the
// team's shared folder (which has docs/ and seed/; the repository's src/shared has neither).
const OUTSIDE_PATHS =
  /(?:^|[\s`'"(=:])(\/(?:work|home|root|Users)\/[^\s)`'",;]*|(?:\.\.\/)*shared\/(?:docs|seed)\/[^\s)`'",;]*)/g;

/**
 * Everything wrong with one Markdown file's links: a relative link to a file or directory that does not
 * exist, an anchor its target file does not have, a link that leaves the repository or is absolute, and
 * (anywhere in the text, code included) a path that names a place outside the repository.
 */
export function checkMarkdownFile(repoRoot: string, relativeFile: string): LinkProblem[] {
  const file = path.join(repoRoot, relativeFile);
  const markdown = readFileSync(file, 'utf8');
  const problems: LinkProblem[] = [];
  const report = (line: number, problem: string) => problems.push({ file: relativeFile, line, problem });

  for (const { line, target } of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (/^file:/i.test(target)) report(line, `${target}: a file: URL points outside the repository`);
      continue; // A web address (https:, mailto:): not this test's business.
    }
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    if (pathPart.startsWith('/')) {
      report(line, `${target}: an absolute path; link relative to this file instead`);
      continue;
    }
    const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), pathPart);
    const inRepo = path.relative(repoRoot, resolved);
    if (inRepo.startsWith('..') || path.isAbsolute(inRepo)) {
      report(line, `${target}: points outside the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      report(line, `${target}: no such file or directory (${inRepo})`);
      continue;
    }
    if (anchor !== null && anchor !== '') {
      if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) {
        report(line, `${target}: an anchor on something that is not a Markdown file`);
      } else if (!anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) {
        report(line, `${target}: ${inRepo} has no heading with the anchor #${anchor}`);
      }
    }
  }

  markdown.split('\n').forEach((text, index) => {
    for (const outside of text.matchAll(OUTSIDE_PATHS)) {
      report(index + 1, `${outside[1]!.replace(/\.+$/, '')}: names a path outside the repository`);
    }
  });
  return problems;
}

/**
 * The repository's Markdown pages that a file names by path (`docs/….md`), as code comments do, with the line
 * of each mention. A page that moves leaves such a mention behind, pointing at nothing.
 */
export function docPagesNamedIn(text: string): MarkdownLink[] {
  const named: MarkdownLink[] = [];
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/(?<![\w./-])(docs\/[\w./-]*?\.md)(?![\w/-])/g)) {
      named.push({ line: index + 1, target: match[1]! });
    }
  });
  return named;
}
