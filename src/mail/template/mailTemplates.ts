// The shop's mail as LiquidJS templates, checked once at start; rendering is pure (docs/providers.md, "The mail").
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Liquid, type Template } from 'liquidjs';
import { escapeHtml } from '../htmlEscape';
import { checkHtmlPlacement, checkTemplate, TEMPLATE_TAGS } from './checkTemplate';
import { MAIL_FIELDS, type Fields, type MailView } from './mailFields';
import {
  formatDateTime,
  formatMoney,
  httpsUrl,
  isKnownTimeZone,
  TEMPLATE_LOCALES,
  type Money,
  type TemplateLocale,
} from './templateHelpers';

/** The Japanese mail the repository ships, used when MAIL_TEMPLATE_DIR is not set. */
export const DEFAULT_TEMPLATE_DIR = path.join(__dirname, '..', 'templates', 'ja');

export const TEMPLATE_FILES = ['mail.json', 'subject.liquid', 'text.liquid', 'html.liquid'] as const;

export class MailTemplateError extends Error {
  override readonly name = 'MailTemplateError';
  readonly code = 'MAIL_TEMPLATE_INVALID';
  constructor(
    readonly dir: string,
    readonly problems: readonly string[],
  ) {
    super(`The mail template in ${dir} cannot be used:\n  - ${problems.join('\n  - ')}`);
  }
}

/** A value of one order that the template could not render (a link that is not https, a line break in the subject). */
export class MailRenderError extends Error {
  override readonly name = 'MailRenderError';
  readonly code = 'MAIL_RENDER_FAILED';
}

export interface RenderedParts {
  subject: string;
  text: string;
  html: string;
}

export interface MailTemplates {
  /** mail.json's name: recorded with each attempt, beside the hash. */
  readonly name: string;
  /** SHA-256 (hex) of the four files as loaded: which bytes rendered a mail. */
  readonly sha256: string;
  readonly dir: string;
  render(view: MailView): RenderedParts;
}

interface Manifest {
  name: string;
  locale: TemplateLocale;
  timeZone: string;
}

function readManifest(text: string, problems: string[]): Manifest | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    problems.push(`mail.json is not JSON: ${(error as Error).message}`);
    return null;
  }
  const manifest = (parsed ?? {}) as Record<string, unknown>;
  const known = ['name', 'locale', 'timeZone'];
  for (const key of Object.keys(manifest))
    if (!known.includes(key)) problems.push(`mail.json: unknown key ${key}`);
  const { name, locale, timeZone } = manifest;
  if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(name)) {
    problems.push('mail.json: name must be 1–64 letters, digits, dots, dashes or underscores');
  }
  if (!TEMPLATE_LOCALES.includes(locale as TemplateLocale)) {
    problems.push(`mail.json: locale must be one of ${TEMPLATE_LOCALES.join(', ')}`);
  }
  if (typeof timeZone !== 'string' || !isKnownTimeZone(timeZone)) {
    problems.push('mail.json: timeZone must be an IANA time zone, e.g. Asia/Tokyo');
  }
  return problems.length > 0
    ? null
    : { name: name as string, locale: locale as TemplateLocale, timeZone: timeZone as string };
}

/** An engine with our filters and tags only; `escape` makes every output of the HTML part HTML-escaped. */
const HTML_ESCAPE = (value: unknown): string => escapeHtml(String(value));

function engine(manifest: Manifest, escape: boolean): Liquid {
  const liquid = new Liquid({
    strictVariables: true,
    strictFilters: true,
    ownPropertyOnly: true,
    cache: false,
    // Nothing is read from disk while rendering: no include, render or layout.
    root: [],
    partials: [],
    layouts: [],
    ...(escape ? { outputEscape: HTML_ESCAPE } : {}),
  });
  for (const name of Object.keys(liquid.filters)) delete liquid.filters[name];
  for (const name of Object.keys(liquid.tags)) {
    if (!(TEMPLATE_TAGS as readonly string[]).includes(name)) delete liquid.tags[name];
  }
  liquid.registerFilter('money', (value: Money) => formatMoney(value, manifest.locale));
  liquid.registerFilter('datetime', (value: Date) =>
    formatDateTime(value, manifest.locale, manifest.timeZone),
  );
  liquid.registerFilter('https_url', (value: string) => httpsUrl(value));
  return liquid;
}

function parse(liquid: Liquid, file: string, source: string, problems: string[]): Template[] | null {
  try {
    return liquid.parse(source);
  } catch (error) {
    problems.push(`${file}: ${(error as Error).message.split('\n')[0]}`);
    return null;
  }
}

/** Throws MailTemplateError naming every problem. */
export function loadMailTemplates(dir: string, fields: Fields = MAIL_FIELDS): MailTemplates {
  const problems: string[] = [];
  const files = new Map<string, string>();
  for (const file of TEMPLATE_FILES) {
    try {
      files.set(file, readFileSync(path.join(dir, file), 'utf8'));
    } catch (error) {
      problems.push(
        `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  if (problems.length > 0) throw new MailTemplateError(dir, problems);
  const manifest = readManifest(files.get('mail.json')!, problems);
  if (manifest === null) throw new MailTemplateError(dir, problems);

  // The file may end with one newline, as editors leave it; the subject itself is one line.
  const subjectSource = files.get('subject.liquid')!.replace(/\r?\n$/, '');
  if (/[\r\n]/.test(subjectSource))
    problems.push('subject.liquid: the subject must be one line (no CR or LF)');
  const textSource = files.get('text.liquid')!;
  const htmlSource = files.get('html.liquid')!;

  const plain = engine(manifest, false);
  const escaping = engine(manifest, true);
  const subject = parse(plain, 'subject.liquid', subjectSource, problems);
  const text = parse(plain, 'text.liquid', textSource, problems);
  const html = parse(escaping, 'html.liquid', htmlSource, problems);
  if (subject) problems.push(...checkTemplate('subject.liquid', subject, fields).problems);
  if (text) problems.push(...checkTemplate('text.liquid', text, fields).problems);
  if (html) {
    const checked = checkTemplate('html.liquid', html, fields, HTML_ESCAPE);
    problems.push(...checked.problems, ...checkHtmlPlacement('html.liquid', htmlSource, checked.outputs));
  }
  if (problems.length > 0 || !subject || !text || !html) throw new MailTemplateError(dir, problems);

  const sha256 = createHash('sha256')
    .update(JSON.stringify(TEMPLATE_FILES.map((file) => files.get(file))))
    .digest('hex');
  const renderPart = (liquid: Liquid, templates: Template[], view: MailView, part: string): string => {
    try {
      return liquid.renderSync(templates, view) as string;
    } catch (error) {
      throw new MailRenderError(`${part}: ${(error as Error).message.split('\n')[0]}`);
    }
  };
  return {
    name: manifest.name,
    sha256,
    dir,
    render(view) {
      const renderedSubject = renderPart(plain, subject, view, 'subject.liquid');
      // Values are made one line before rendering (displayText); this is the last word on the header.
      if (/[\r\n]/.test(renderedSubject))
        throw new MailRenderError('subject.liquid: the rendered subject has a line break');
      return {
        subject: renderedSubject,
        text: renderPart(plain, text, view, 'text.liquid'),
        html: renderPart(escaping, html, view, 'html.liquid'),
      };
    },
  };
}

let shipped: MailTemplates | undefined;

/** The shipped Japanese template, loaded on first use (tests and tools that pass no template of their own). */
export function defaultMailTemplates(): MailTemplates {
  shipped ??= loadMailTemplates(DEFAULT_TEMPLATE_DIR);
  return shipped;
}
