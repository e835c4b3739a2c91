// The checks a template passes when it loads, each problem named with its line (docs/providers.md, "The mail").
import { ForTag, IfTag, Output, TokenKind, Tokenizer, UnlessTag, type Template, type Token } from 'liquidjs';
import { FORLOOP_FIELDS, type Fields, type ScalarType } from './mailFields';

/** The tags a template may use; every other tag is unknown to the engine and fails to parse. */
export const TEMPLATE_TAGS = ['if', 'unless', 'for', 'break', 'continue', 'comment', '#'] as const;

export const TEMPLATE_FILTERS = {
  money: { from: 'money', to: 'text' },
  datetime: { from: 'instant', to: 'text' },
  https_url: { from: 'text', to: 'text' },
} as const satisfies Record<string, { from: ScalarType; to: ScalarType }>;

type FieldType = ScalarType | Fields | readonly [Fields];

interface TokenWithPosition {
  begin: number;
  getPosition(): number[];
}

function at(token: TokenWithPosition): string {
  const [line, column] = token.getPosition();
  return `line ${line}, column ${column}`;
}

function describe(type: FieldType): string {
  if (typeof type === 'string') return type;
  return Array.isArray(type) ? 'a list' : 'a group of fields';
}

interface PropertyAccess {
  kind: TokenKind;
  props: { kind: TokenKind; content?: string; getText(): string }[];
  getText(): string;
}

class Checker {
  readonly problems: string[] = [];
  /** Where each output starts in the source → the filters it goes through (for the HTML check). */
  readonly outputs = new Map<number, string[]>();

  constructor(
    private readonly file: string,
    private readonly fields: Fields,
    private readonly escape: unknown,
  ) {}

  private problem(token: TokenWithPosition, message: string): void {
    this.problems.push(`${this.file} ${at(token)}: ${message}`);
  }

  /** The type a field path names, or null (a problem reported) when the view has no such field. */
  private resolve(access: PropertyAccess, token: TokenWithPosition, scope: ReadonlyMap<string, FieldType>) {
    const names: string[] = [];
    for (const prop of access.props) {
      if (prop.kind !== TokenKind.Word || prop.content === undefined) {
        this.problem(token, `${access.getText()}: only plain field names (a.b.c) may be used`);
        return null;
      }
      names.push(prop.content);
    }
    const [root, ...rest] = names;
    let type: FieldType | undefined =
      root === undefined
        ? undefined
        : (scope.get(root) ?? (Object.hasOwn(this.fields, root) ? this.fields[root] : undefined));
    for (const name of rest) {
      if (type === undefined) break;
      if (Array.isArray(type)) {
        type = name === 'size' ? 'number' : undefined;
      } else if (typeof type === 'object') {
        const group = type as Fields;
        type = Object.hasOwn(group, name) ? group[name] : undefined;
      } else {
        type = undefined;
      }
    }
    if (type === undefined) {
      this.problem(token, `unknown field ${access.getText()} (known: ${this.known(scope)})`);
      return null;
    }
    return type;
  }

  private known(scope: ReadonlyMap<string, FieldType>): string {
    const paths: string[] = [];
    const walk = (prefix: string, type: FieldType) => {
      if (typeof type === 'string') paths.push(prefix);
      else if (Array.isArray(type)) paths.push(`${prefix} (a list)`);
      else for (const [name, inner] of Object.entries(type as Fields)) walk(`${prefix}.${name}`, inner);
    };
    for (const [name, type] of [...Object.entries(this.fields), ...scope.entries()]) {
      if (name !== 'forloop') walk(name, type);
    }
    return paths.join(', ');
  }

  private output(node: Output, scope: ReadonlyMap<string, FieldType>): void {
    const { token } = node;
    const postfix = node.value.initial.postfix as unknown as PropertyAccess[];
    // The HTML engine appends its escape (outputEscape) to every output as one more filter, its handler.
    const filters = node.value.filters.filter(
      (filter) =>
        this.escape === undefined || (filter as unknown as { handler: unknown }).handler !== this.escape,
    );
    this.outputs.set(
      token.begin,
      filters.map((filter) => filter.name),
    );
    if (postfix.length !== 1 || postfix[0]!.kind !== TokenKind.PropertyAccess) {
      this.problem(token, 'an output prints one field, e.g. {{ order.id }}');
      return;
    }
    let type = this.resolve(postfix[0]!, token, scope);
    if (type === null) return;
    for (const filter of filters) {
      const helper = (TEMPLATE_FILTERS as Record<string, { from: ScalarType; to: ScalarType }>)[filter.name];
      if (helper === undefined) {
        this.problem(token, `unknown helper ${filter.name}`);
        return;
      }
      if (filter.args.length > 0) this.problem(token, `${filter.name} takes no arguments`);
      if (type !== helper.from) {
        this.problem(
          token,
          `${filter.name} takes a ${helper.from}, and ${postfix[0]!.getText()} is ${describe(type)}`,
        );
        return;
      }
      type = helper.to;
    }
    if (type === 'money') this.problem(token, `${postfix[0]!.getText()} is money: print it with | money`);
    else if (type === 'instant')
      this.problem(token, `${postfix[0]!.getText()} is a time: print it with | datetime`);
    else if (type !== 'text' && type !== 'number') {
      this.problem(token, `${postfix[0]!.getText()} is ${describe(type)}, which cannot be printed`);
    }
  }

  private condition(
    tokens: readonly PropertyAccess[],
    token: TokenWithPosition,
    scope: ReadonlyMap<string, FieldType>,
  ) {
    for (const part of tokens) {
      if (part.kind === TokenKind.PropertyAccess) this.resolve(part, token, scope);
      else if (
        ![TokenKind.Operator, TokenKind.Number, TokenKind.Quoted, TokenKind.Literal].includes(part.kind)
      ) {
        this.problem(token, `${part.getText()}: a condition compares fields with literals only`);
      }
    }
  }

  walk(nodes: readonly Template[], scope: ReadonlyMap<string, FieldType>): void {
    for (const node of nodes) {
      if (node instanceof Output) this.output(node, scope);
      else if (node instanceof IfTag || node instanceof UnlessTag) {
        for (const branch of node.branches) {
          this.condition(branch.value.initial.postfix as unknown as PropertyAccess[], node.token, scope);
          this.walk(branch.templates, scope);
        }
        this.walk(node.elseTemplates ?? [], scope);
      } else if (node instanceof ForTag) {
        const collection = node.collection as unknown as PropertyAccess;
        const type =
          collection.kind === TokenKind.PropertyAccess ? this.resolve(collection, node.token, scope) : null;
        if (collection.kind !== TokenKind.PropertyAccess) {
          this.problem(node.token, 'a loop goes over a list field, e.g. {% for item in items %}');
        } else if (type !== null && !Array.isArray(type)) {
          this.problem(node.token, `${collection.getText()} is ${describe(type)}, not a list`);
        }
        if (Object.keys(node.hash.hash).length > 0) this.problem(node.token, 'a loop takes no options');
        const element: FieldType = Array.isArray(type) ? (type as readonly [Fields])[0] : {};
        this.walk(node.templates, new Map([...scope, [node.variable, element], ['forloop', FORLOOP_FIELDS]]));
        this.walk(node.elseTemplates ?? [], scope);
      }
      // HTML text, comments, break and continue need nothing; no other tag parses.
    }
  }
}

export function checkTemplate(
  file: string,
  templates: readonly Template[],
  fields: Fields,
  escape?: unknown,
) {
  const checker = new Checker(file, fields, escape);
  checker.walk(templates, new Map());
  return { problems: checker.problems, outputs: checker.outputs };
}

// Attributes whose value is a URL: a value there must be an https URL, through https_url and nothing else.
const URL_ATTRIBUTES = new Set([
  'href',
  'src',
  'action',
  'formaction',
  'background',
  'poster',
  'cite',
  'srcset',
  'xlink:href',
  'data',
  'longdesc',
  'usemap',
  'ping',
  'manifest',
]);
const MARK = /\uE000(\d+)\uE001/g;
const START_TAG = /<([a-zA-Z][^\s/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
const ATTRIBUTE = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g;

/** Where each value lands in the HTML part: only where escaping protects it. */
export function checkHtmlPlacement(
  file: string,
  source: string,
  outputs: ReadonlyMap<number, string[]>,
): string[] {
  const problems: string[] = [];
  if (/[\uE000\uE001]/.test(source)) return [`${file}: contains U+E000 or U+E001, which this check reserves`];
  const tokens = new Tokenizer(source).readTopLevelTokens();
  const marked: Token[] = [];
  let skeleton = '';
  for (const token of tokens) {
    if (token.kind === TokenKind.HTML) skeleton += source.slice(token.begin, token.end);
    else if (token.kind === TokenKind.Output) {
      skeleton += `\uE000${marked.length}\uE001`;
      marked.push(token);
    }
  }
  const problem = (index: string, message: string) => {
    const token = marked[Number(index)] as unknown as TokenWithPosition;
    problems.push(`${file} ${at(token)}: ${message}`);
  };
  const placed = new Set<string>();
  for (const tag of skeleton.matchAll(START_TAG)) {
    const attributes = tag[2] ?? '';
    const inValues = new Set<string>();
    for (const attribute of attributes.matchAll(ATTRIBUTE)) {
      const name = attribute[1]!.toLowerCase();
      for (const mark of attribute[1]!.matchAll(MARK)) problem(mark[1]!, 'a value cannot name an attribute');
      const quoted = attribute[2] ?? attribute[3];
      const value = quoted ?? attribute[4] ?? '';
      for (const mark of value.matchAll(MARK)) {
        inValues.add(mark[1]!);
        placed.add(mark[1]!);
        const filters = outputs.get(marked[Number(mark[1])]!.begin) ?? [];
        if (quoted === undefined) problem(mark[1]!, `a value in ${name}= must be inside quotes`);
        else if (name.startsWith('on') || name === 'style') {
          problem(mark[1]!, `no value may go into ${name}= (escaping does not make script or CSS safe)`);
        } else if (URL_ATTRIBUTES.has(name) && (value.trim() !== mark[0] || filters.at(-1) !== 'https_url')) {
          problem(mark[1]!, `a value in ${name}= must be the whole attribute and end with | https_url`);
        }
      }
    }
    for (const mark of attributes.matchAll(MARK)) {
      if (!inValues.has(mark[1]!))
        problem(mark[1]!, 'a value cannot stand inside a tag outside an attribute value');
      placed.add(mark[1]!);
    }
  }
  for (const element of skeleton.matchAll(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi)) {
    for (const mark of element[0].matchAll(MARK)) {
      if (!placed.has(mark[1]!))
        problem(mark[1]!, `no value may go into a <${element[1]!.toLowerCase()}> element`);
    }
  }
  return problems;
}
