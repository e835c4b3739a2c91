// The only filters a template may call. Money by hand, so the bytes never depend on the build's ICU data;
// Intl only for a time zone's wall-clock numbers.
import { formatYen } from '../japaneseFormat';

/** An amount in the currency's minor unit (cents, yen) as a bigint, with its ISO-4217 code. */
export interface Money {
  readonly amountMinor: bigint;
  readonly currency: string;
}

/** The locales a template may name (mail.json), each with its own hand-written layout. */
export const TEMPLATE_LOCALES = ['ja-JP', 'en-US'] as const;
export type TemplateLocale = (typeof TEMPLATE_LOCALES)[number];

// ISO 4217 minor-unit exponents of the currencies we can write out; another currency fails the render.
const MINOR_DIGITS: Readonly<Record<string, number>> = {
  JPY: 0,
  KRW: 0,
  USD: 2,
  EUR: 2,
  GBP: 2,
  CAD: 2,
  AUD: 2,
  CHF: 2,
  CNY: 2,
};
const EN_SYMBOLS: Readonly<Record<string, string>> = { USD: '$', EUR: '€', GBP: '£', JPY: '¥' };

function grouped(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function formatMoney(money: Money, locale: TemplateLocale): string {
  const exponent = MINOR_DIGITS[money.currency];
  if (exponent === undefined)
    throw new Error(`no money format for currency ${JSON.stringify(money.currency)}`);
  // Today's Japanese mail, byte for byte: "1,234円".
  if (locale === 'ja-JP' && money.currency === 'JPY') return formatYen(money.amountMinor);
  const negative = money.amountMinor < 0n;
  const digits = (negative ? -money.amountMinor : money.amountMinor).toString().padStart(exponent + 1, '0');
  const whole = grouped(digits.slice(0, digits.length - exponent));
  const number = exponent === 0 ? whole : `${whole}.${digits.slice(digits.length - exponent)}`;
  const sign = negative ? '-' : '';
  const symbol = locale === 'en-US' ? EN_SYMBOLS[money.currency] : undefined;
  return symbol === undefined ? `${sign}${number} ${money.currency}` : `${sign}${symbol}${number}`;
}

const EN_MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

// One formatter per time zone: making one costs far more than formatting with it (it was most of a mail's
// rendering, docs/benchmarks.md), and it holds no state between calls.
const wallClockFormats = new Map<string, Intl.DateTimeFormat>();

function wallClockFormat(timeZone: string): Intl.DateTimeFormat {
  let format = wallClockFormats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    wallClockFormats.set(timeZone, format);
  }
  return format;
}

/** The instant's wall clock in the time zone, as numbers (Intl's tz data, no words). */
function wallClock(instant: Date, timeZone: string) {
  const parts = wallClockFormat(timeZone).formatToParts(instant);
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    Number(parts.find((each) => each.type === type)?.value);
  return {
    year: part('year'),
    month: part('month'),
    day: part('day'),
    hour: part('hour'),
    minute: part('minute'),
  };
}

/** ja-JP: "2026年1月5日 09:03" (today's Japanese mail); en-US: "January 5, 2026, 09:03". */
export function formatDateTime(instant: Date, locale: TemplateLocale, timeZone: string): string {
  const { year, month, day, hour, minute } = wallClock(instant, timeZone);
  const pad = (value: number) => String(value).padStart(2, '0');
  return locale === 'ja-JP'
    ? `${year}年${month}月${day}日 ${pad(hour)}:${pad(minute)}`
    : `${EN_MONTHS[month - 1]} ${day}, ${year}, ${pad(hour)}:${pad(minute)}`;
}

export function isKnownTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** The value as an https URL, or an error: the only way a value reaches an href or src. */
export function httpsUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('a link must be an absolute https URL, and this value is not a URL');
  }
  if (url.protocol !== 'https:') throw new Error(`a link must be an https URL, not ${url.protocol}`);
  return url.href;
}
