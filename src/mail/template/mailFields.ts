// What a template may name; checked at load, so a misspelt field stops the start, not one customer's mail.
import type { Money } from './templateHelpers';

export type ScalarType = 'text' | 'number' | 'boolean' | 'money' | 'instant';
/** A group of named fields; a list is a one-element tuple holding its elements' fields. */
export interface Fields {
  readonly [name: string]: ScalarType | Fields | readonly [Fields];
}

/** The fields of every mail: what the order contract delivers (the order and its items) and the mail's own. */
export const MAIL_FIELDS = {
  mail: { subject: 'text', repliesWelcome: 'boolean' },
  order: { id: 'text', customerName: 'text', orderedAt: 'instant', total: 'money', extra: {} },
  items: [{ name: 'text', quantity: 'number', unitPrice: 'money', subtotal: 'money' }],
} as const satisfies Fields;

/** Each extra_<name> column of the orders view is order.extra.<name>, text. */
export function mailFieldsWith(extras: readonly string[]): Fields {
  return {
    ...MAIL_FIELDS,
    order: { ...MAIL_FIELDS.order, extra: Object.fromEntries(extras.map((name) => [name, 'text' as const])) },
  };
}

/** The values a template renders from; their shape is MAIL_FIELDS. */
export interface MailView {
  mail: { subject: string; repliesWelcome: boolean };
  order: { id: string; customerName: string; orderedAt: Date; total: Money; extra: Record<string, string> };
  items: { name: string; quantity: number; unitPrice: Money; subtotal: Money }[];
}

/** The fields Liquid gives inside a {% for %} loop. */
export const FORLOOP_FIELDS = {
  index: 'number',
  index0: 'number',
  rindex: 'number',
  rindex0: 'number',
  first: 'boolean',
  last: 'boolean',
  length: 'number',
} as const satisfies Fields;
