// Every statement that writes order_mail_log or order_mail_attempts, captured at the pool (pg's Pool and
// Client query), with where it came from. A statement issued from the product (a frame of src/ on its stack)
// must come from src/mailRow/statements.ts: anything else is refused there and then, and fails the test it
// ran in. Test fixtures that write rows directly are outside the product and pass.
import { join, sep } from 'node:path';
import pg from 'pg';

const REPO = join(__dirname, '..', '..');
export const STATEMENTS_FILE = join(REPO, 'src', 'mailRow', 'statements.ts');
/** The migrations' own writes (adoption's copy) are outside the rule, as spine-figures counts them. */
const MIGRATOR_FILE = join(REPO, 'src', 'db', 'migrator.ts');
/** The pool and the SQL builder carry every statement, a fixture's too: they issue none of their own. */
const PLUMBING = [join(REPO, 'src', 'db', 'pool.ts'), join(REPO, 'src', 'db', 'sql.ts')];

/** The product's roots: a frame under one of these is the product's. A test may add a root of its own. */
export const productRoots: string[] = [join(REPO, 'src') + sep];

const ROW_WRITE = /(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+("?public"?\.)?"?order_mail_(log|attempts)\b/i;

export interface CapturedWrite {
  text: string;
  /** The repository's files on the stack, innermost first. */
  files: string[];
  /** Why it is refused; null when it may run. */
  refused: string | null;
}

export class RowWriteOutsideStatementsError extends Error {
  override readonly name = 'RowWriteOutsideStatementsError';
}

/** Every captured write of this process, and those refused since the last `takeRefused()`. */
export const captured: CapturedWrite[] = [];
let refused: CapturedWrite[] = [];

export function takeRefused(): CapturedWrite[] {
  const taken = refused;
  refused = [];
  return taken;
}

export function isRowWrite(text: string): boolean {
  return ROW_WRITE.test(text);
}

/** The repository files on `stack`, innermost first (node_modules and node's own left out). */
export function repositoryFiles(stack: string): string[] {
  const files: string[] = [];
  for (const match of stack.matchAll(/\(?((?:file:\/\/)?\/[^():\s]+\.(?:ts|mts|js|mjs)):\d+:\d+\)?/g)) {
    const file = match[1]!.replace(/^file:\/\//, '');
    if (file.startsWith(REPO + sep) && !file.includes(`${sep}node_modules${sep}`) && file !== __filename) {
      files.push(file);
    }
  }
  return files;
}

/** Null when a write with these files on its stack may run; else why not. */
export function judgeWrite(files: string[]): string | null {
  if (files.length === 0) return 'no file of the repository on its stack: nobody can say who wrote it';
  const product = files.filter(
    (file) => productRoots.some((root) => file.startsWith(root)) && !PLUMBING.includes(file),
  );
  if (product.length === 0 || product.includes(STATEMENTS_FILE) || product.includes(MIGRATOR_FILE))
    return null;
  return `issued from ${product[0]!.slice(REPO.length + 1)}, not from src/mailRow/statements.ts`;
}

function textOf(query: unknown): string | null {
  if (typeof query === 'string') return query;
  if (query !== null && typeof query === 'object' && 'text' in query && typeof query.text === 'string') {
    return query.text;
  }
  return null;
}

/**
 * The stack as file:line:column lines, unmapped: only the files are read, and the test runner's own formatting
 * maps every frame through its source maps, most of a statement's cost in a file that writes many (issue 38).
 */
function rawStack(): string {
  // Put back as it was, absent or the test runner's.
  const prepare = Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace');
  const limit = Error.stackTraceLimit;
  Error.prepareStackTrace = (_error, sites) =>
    sites
      .map(
        (site) =>
          `    at (${site.getFileName() ?? '?'}:${site.getLineNumber() ?? 0}:${site.getColumnNumber() ?? 0})`,
      )
      .join('\n');
  Error.stackTraceLimit = 200;
  try {
    const holder: { stack?: string } = {};
    Error.captureStackTrace(holder);
    return holder.stack ?? '';
  } finally {
    if (prepare === undefined) Reflect.deleteProperty(Error, 'prepareStackTrace');
    else Object.defineProperty(Error, 'prepareStackTrace', prepare);
    Error.stackTraceLimit = limit;
  }
}

function check(query: unknown, viaClient: boolean): void {
  const text = textOf(query);
  if (text === null || !isRowWrite(text)) return;
  const stack = rawStack();
  // The pool's own call of its client's query: judged when the pool was asked.
  if (viaClient && /[\\/]pg-pool[\\/]/.test(stack)) return;
  const write: CapturedWrite = { text, files: repositoryFiles(stack), refused: null };
  write.refused = judgeWrite(write.files);
  captured.push(write);
  // Only the latest are kept: a long property or chaos file writes many thousands.
  if (captured.length > 20_000) captured.splice(0, 10_000);
  if (write.refused !== null) {
    refused.push(write);
    throw new RowWriteOutsideStatementsError(
      `a statement writing the mail row ${write.refused}:\n${text.trim().slice(0, 300)}\nstack: ${write.files.join(' <- ')}`,
    );
  }
}

// The patch is made once per process, marked on the prototypes: test files share a process (isolate: false),
// and a module evaluated again must not wrap the wrapper. It calls the check of the latest install.
const CAPTURE = Symbol.for('order-confirmation-mail.rowWriteCapture');
type Patched = { query: (...args: unknown[]) => unknown; [CAPTURE]?: { check: typeof check } };

/**
 * Patches pg's Pool and Client query. The pool's, because a pooled query reaches the client's in a callback
 * that keeps no caller on its stack; the client's, for statements on a checked-out client (transactions).
 * Called by every test file's setup: each file starts with nothing captured and nothing refused.
 */
export function installRowWriteCapture(): void {
  captured.length = 0;
  refused = [];
  const protos = [pg.Pool.prototype, pg.Client.prototype] as Patched[];
  protos.forEach((proto, index) => {
    const patched = proto[CAPTURE];
    if (patched !== undefined) {
      patched.check = check;
      return;
    }
    const original = proto.query;
    const capture = { check };
    proto[CAPTURE] = capture;
    proto.query = function (this: unknown, ...args: unknown[]) {
      capture.check(args[0], index === 1);
      return original.apply(this, args);
    };
  });
}
