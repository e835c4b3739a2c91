// The shop's mail templates: what is refused when they load (each problem named, nothing rendered) and what
// order values can and cannot do to a rendered mail. Pure: templates written to a temporary directory.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { OrderForMail } from '../../src/db/orders';
import { yenOrder } from './jaDefaultOrders';
import { confirmationView, renderConfirmationMail } from '../../src/mail/confirmationMail';
import {
  DEFAULT_TEMPLATE_DIR,
  loadMailTemplates,
  MailRenderError,
  MailTemplateError,
} from '../../src/mail/template/mailTemplates';
import { formatDateTime, formatMoney } from '../../src/mail/template/templateHelpers';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

const ENGLISH = {
  'mail.json': '{ "name": "en-test", "locale": "en-US", "timeZone": "America/New_York" }\n',
  'subject.liquid': 'Your order {{ order.id }}, {{ order.customerName }}\n',
  'text.liquid':
    'Hello {{ order.customerName }},\n{% for item in items %}- {{ item.name }} x {{ item.quantity }}: {{ item.subtotal | money }}\n{% endfor %}Total {{ order.total | money }} ({{ order.orderedAt | datetime }})\n',
  'html.liquid':
    '<p title="{{ order.customerName }}">Hello {{ order.customerName }}</p>{% for item in items %}<li>{{ item.name }}</li>{% endfor %}<p>{{ order.total | money }}</p>\n',
};
type Files = Partial<Record<keyof typeof ENGLISH, string>>;

function templateDir(overrides: Files = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'mail-template-'));
  dirs.push(dir);
  for (const [file, content] of Object.entries({ ...ENGLISH, ...overrides })) {
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

function problemsOf(overrides: Files): string[] {
  try {
    loadMailTemplates(templateDir(overrides));
  } catch (error) {
    expect(error).toBeInstanceOf(MailTemplateError);
    return [...(error as MailTemplateError).problems];
  }
  throw new Error('the template loaded');
}

const IDENTITY = { from: 'shop@example.com', replyTo: null, subject: 'Thanks' };

function order(overrides: Partial<OrderForMail> = {}): OrderForMail {
  return yenOrder({
    orderId: '77',
    customerName: 'Ada Lovelace',
    customerEmail: 'ada@example.com',
    orderedAt: new Date('2026-03-08T07:30:00Z'),
    items: [{ productName: 'Tea', quantity: 2, unitAmountMinor: 1200n }],
    ...overrides,
  });
}

describe('a template that loads', () => {
  it('renders subject, text and HTML from the order, with its name and the hash of its files', () => {
    const templates = loadMailTemplates(templateDir());
    const mail = renderConfirmationMail(order(), IDENTITY, templates);
    expect(mail.subject).toBe('Your order 77, Ada Lovelace');
    expect(mail.text).toBe('Hello Ada Lovelace,\n- Tea x 2: ¥2,400\nTotal ¥2,400 (March 8, 2026, 03:30)\n');
    expect(mail.html).toBe('<p title="Ada Lovelace">Hello Ada Lovelace</p><li>Tea</li><p>¥2,400</p>\n');
    expect(templates.name).toBe('en-test');
    expect(templates.sha256).toMatch(/^[0-9a-f]{64}$/);
    // Another byte in any file is another hash.
    expect(loadMailTemplates(templateDir({ 'text.liquid': `${ENGLISH['text.liquid']} ` })).sha256).not.toBe(
      templates.sha256,
    );
  });

  it('the shipped default is the Japanese template, named ja-default', () => {
    expect(loadMailTemplates(DEFAULT_TEMPLATE_DIR).name).toBe('ja-default');
  });
});

describe('refused when the template loads, each problem named', () => {
  it.each<[string, Files, RegExp]>([
    ['a syntax error', { 'text.liquid': 'Hello {% if order.id %}' }, /text\.liquid: .*(not closed|endif)/i],
    ['an unclosed output', { 'html.liquid': '<p>{{ order.id </p>' }, /html\.liquid: /],
    ['raw output {{{ }}}', { 'html.liquid': '<p>{{{ order.customerName }}}</p>' }, /html\.liquid/],
    ['raw output {{& }}', { 'html.liquid': '<p>{{& order.customerName }}</p>' }, /html\.liquid/],
    ['raw output | raw', { 'html.liquid': '<p>{{ order.customerName | raw }}</p>' }, /undefined filter: raw/],
    ['the {% raw %} tag', { 'html.liquid': '{% raw %}{{ x }}{% endraw %}' }, /html\.liquid: .*raw/],
    ['a built-in filter', { 'text.liquid': '{{ order.customerName | upcase }}' }, /undefined filter: upcase/],
    ['an include', { 'html.liquid': "{% include 'x' %}" }, /html\.liquid: .*include/],
    ['an assign', { 'text.liquid': '{% assign x = order.id %}{{ x }}' }, /text\.liquid: .*assign/],
    ['a subject with a line break', { 'subject.liquid': 'Your order\r\nBcc: x@example.com\n' }, /one line/],
    ['a subject with an LF', { 'subject.liquid': 'Your order\n{{ order.id }}\n' }, /one line/],
    ['an unknown field', { 'text.liquid': '{{ order.loyaltyTier }}' }, /unknown field order\.loyaltyTier/],
    [
      'an unknown item field',
      { 'html.liquid': '{% for item in items %}{{ item.sku }}{% endfor %}' },
      /unknown field item\.sku/,
    ],
    [
      'an unknown field in a condition',
      { 'text.liquid': '{% if order.vip %}x{% endif %}' },
      /unknown field order\.vip/,
    ],
    ['the prototype', { 'text.liquid': '{{ order.constructor }}' }, /unknown field order\.constructor/],
    ['a string length', { 'text.liquid': '{{ order.customerName.size }}' }, /unknown field/],
    ['money without its helper', { 'text.liquid': '{{ order.total }}' }, /is money: print it with \| money/],
    ['a time without its helper', { 'text.liquid': '{{ order.orderedAt }}' }, /is a time/],
    ['a helper on the wrong type', { 'text.liquid': '{{ order.id | money }}' }, /money takes a money/],
    [
      'a value in href without https_url',
      { 'html.liquid': '<a href="{{ order.customerName }}">x</a>' },
      /https_url/,
    ],
    [
      'a value inside an href',
      { 'html.liquid': '<a href="https://shop.example/{{ order.id | https_url }}">x</a>' },
      /whole attribute/,
    ],
    ['a value in src', { 'html.liquid': "<img src='{{ order.id }}'>" }, /src= must be the whole attribute/],
    ['a value in an event handler', { 'html.liquid': '<a onclick="go({{ order.id }})">x</a>' }, /onclick=/],
    ['a value in style', { 'html.liquid': '<p style="color:{{ order.id }}">x</p>' }, /style=/],
    ['an unquoted attribute value', { 'html.liquid': '<p title={{ order.id }}>x</p>' }, /inside quotes/],
    ['a value as an attribute', { 'html.liquid': '<p {{ order.id }}>x</p>' }, /outside an attribute value/],
    ['a value in a script', { 'html.liquid': '<script>var id = "{{ order.id }}";</script>' }, /<script>/],
    ['an unknown locale', { 'mail.json': '{ "name": "x", "locale": "fr-FR", "timeZone": "UTC" }' }, /locale/],
    [
      'an unknown time zone',
      { 'mail.json': '{ "name": "x", "locale": "en-US", "timeZone": "Mars/Base" }' },
      /timeZone/,
    ],
  ])('%s', (_, overrides, problem) => {
    const problems = problemsOf(overrides);
    expect(
      problems.some((each) => problem.test(each)),
      problems.join('\n'),
    ).toBe(true);
  });

  it('a missing file, named', () => {
    const dir = templateDir();
    rmSync(path.join(dir, 'html.liquid'));
    expect(() => loadMailTemplates(dir)).toThrow(/html\.liquid: cannot be read \(ENOENT\)/);
  });

  it('every problem at once, with its file and line', () => {
    const problems = problemsOf({
      'text.liquid': 'a\n{{ order.nope }}',
      'html.liquid': '<a href="{{ order.id }}">{{ items }}</a>',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^text\.liquid line 2, column 1: unknown field order\.nope/),
        expect.stringMatching(
          /^html\.liquid line 1, column 10: a value in href= must be the whole attribute/,
        ),
        expect.stringMatching(/^html\.liquid line 1, column 26: items is a list, which cannot be printed/),
      ]),
    );
  });
});

describe('order values: rendered as text, escaped in HTML, never a header', () => {
  const hostile = order({
    customerName:
      'Eve\r\nBcc: everyone@example.com <script>alert(1)</script> {{ order.id }} <%= 7*7 %> ${7*7}',
    items: [
      {
        productName: '<img src=x onerror=alert(1)> {% raw %} "q" \'s\' & co',
        quantity: 1,
        unitAmountMinor: 5n,
      },
    ],
  });
  const templates = loadMailTemplates(templateDir());
  const mail = renderConfirmationMail(hostile, IDENTITY, templates);

  it('the subject stays one line: the line break is gone, no Bcc header can be made', () => {
    expect(mail.subject).not.toMatch(/[\r\n]/);
    expect(mail.subject).toBe(
      'Your order 77, Eve Bcc: everyone@example.com <script>alert(1)</script> {{ order.id }} <%= 7*7 %> ${7*7}',
    );
  });

  it('the text part shows the characters as they are, template syntax not evaluated', () => {
    expect(mail.text).toContain(
      'Hello Eve Bcc: everyone@example.com <script>alert(1)</script> {{ order.id }} <%= 7*7 %> ${7*7},',
    );
    expect(mail.text).toContain('- <img src=x onerror=alert(1)> {% raw %} "q" \'s\' & co x 1');
  });

  it('the HTML part escapes every value, in text and in attributes', () => {
    expect(mail.html).not.toMatch(/<script|<img/);
    expect(mail.html).toContain(
      '<p title="Eve Bcc: everyone@example.com &lt;script&gt;alert(1)&lt;/script&gt; {{ order.id }} &lt;%= 7*7 %&gt; ${7*7}">',
    );
    expect(mail.html).toContain(
      '<li>&lt;img src=x onerror=alert(1)&gt; {% raw %} &quot;q&quot; &#39;s&#39; &amp; co</li>',
    );
  });

  it('a line break that reaches the subject anyway is refused at render', () => {
    const view = confirmationView(order(), IDENTITY);
    view.order.customerName = 'Eve\r\nBcc: everyone@example.com';
    expect(() => templates.render(view)).toThrow(MailRenderError);
  });

  it('a link takes only an https URL: anything else fails the render', () => {
    const linked = loadMailTemplates(
      templateDir({ 'html.liquid': '<a href="{{ order.customerName | https_url }}">your order</a>' }),
    );
    const render = (customerName: string) =>
      renderConfirmationMail(order({ customerName }), IDENTITY, linked).html;
    expect(render('https://shop.example/o?a=1&b="2"')).toBe(
      '<a href="https://shop.example/o?a=1&amp;b=%222%22">your order</a>',
    );
    for (const bad of [
      'javascript:alert(1)',
      'http://shop.example/',
      'data:text/html,x',
      '/relative',
      'not a url',
    ]) {
      expect(() => render(bad), bad).toThrow(MailRenderError);
    }
  });
});

describe('helpers', () => {
  it.each([
    [1234567n, 'JPY', 'ja-JP', '1,234,567円'],
    [-1500n, 'JPY', 'ja-JP', '-1,500円'],
    [123456n, 'USD', 'en-US', '$1,234.56'],
    [5n, 'USD', 'en-US', '$0.05'],
    [-100n, 'USD', 'en-US', '-$1.00'],
    [1999n, 'USD', 'ja-JP', '19.99 USD'],
    [1000n, 'KRW', 'en-US', '1,000 KRW'],
  ] as const)('money %s %s in %s is %s', (amountMinor, currency, locale, expected) => {
    expect(formatMoney({ amountMinor, currency }, locale)).toBe(expected);
  });

  it('an unknown currency fails', () => {
    expect(() => formatMoney({ amountMinor: 1n, currency: 'XXX' }, 'en-US')).toThrow(/XXX/);
  });

  it.each([
    ['2025-12-31T15:30:00Z', 'ja-JP', 'Asia/Tokyo', '2026年1月1日 00:30'],
    ['2026-03-08T06:59:00Z', 'en-US', 'America/New_York', 'March 8, 2026, 01:59'],
    // Daylight saving time began at 2:00 that morning in New York.
    ['2026-03-08T07:00:00Z', 'en-US', 'America/New_York', 'March 8, 2026, 03:00'],
  ] as const)('the time %s in %s, %s is %s', (instant, locale, timeZone, expected) => {
    expect(formatDateTime(new Date(instant), locale, timeZone)).toBe(expected);
  });

  it('makes one date formatter per time zone, not one per date (docs/benchmarks.md), and each keeps its zone', () => {
    const made = vi.spyOn(Intl, 'DateTimeFormat');
    try {
      const times = ['2026-05-01T00:00:00Z', '2026-05-02T12:34:00Z', '2026-05-03T23:59:00Z'];
      const auckland = times.map((time) => formatDateTime(new Date(time), 'ja-JP', 'Pacific/Auckland'));
      const chicago = times.map((time) => formatDateTime(new Date(time), 'en-US', 'America/Chicago'));
      expect(made).toHaveBeenCalledTimes(2);
      expect(auckland).toEqual(['2026年5月1日 12:00', '2026年5月3日 00:34', '2026年5月4日 11:59']);
      expect(chicago).toEqual(['April 30, 2026, 19:00', 'May 2, 2026, 07:34', 'May 3, 2026, 18:59']);
    } finally {
      made.mockRestore();
    }
  });

  it('the shipped template reads no file but its own four', () => {
    expect(readFileSync(path.join(DEFAULT_TEMPLATE_DIR, 'subject.liquid'), 'utf8')).toBe(
      '{{ mail.subject }}\n',
    );
  });
});
