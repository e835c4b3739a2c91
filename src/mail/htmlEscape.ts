// `html` escapes every interpolated value unless it is SafeHtml, so a template never has to remember to.

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

/** Markup that is already safe: only `html` and `joinHtml` make it. */
export class SafeHtml {
  private constructor(readonly markup: string) {}

  /** @internal Used by `html` and `joinHtml` only. */
  static trusted(markup: string): SafeHtml {
    return new SafeHtml(markup);
  }

  toString(): string {
    return this.markup;
  }
}

export type HtmlValue = SafeHtml | string | number | bigint | readonly HtmlValue[];

/** A template literal tag: literal parts are markup, every `${value}` is escaped (arrays are concatenated). */
export function html(literals: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let markup = literals[0] ?? '';
  values.forEach((value, index) => {
    markup += render(value) + (literals[index + 1] ?? '');
  });
  return SafeHtml.trusted(markup);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.markup;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}
