// Every statement one pool sends to Postgres, counted at pg's Client (BEGIN and COMMIT included, as Postgres
// receives them), told apart by the application_name that pool connects with: the worker's statements, not the
// test's own reads. docs/benchmarks.md, "Statements per order since 2.0".
import pg from 'pg';

/** The order's tables and views: order_mail_source's views (2.0 read the demo's tables themselves). */
const ORDER_SOURCE = /\b(orders_for_mail|order_items_for_mail|orders|order_items)\b/i;

export interface StatementTally {
  all: number;
  /** BEGIN, COMMIT, ROLLBACK. */
  transactionControl: number;
  /** Statements that name each (one statement may name several). */
  orderMailLog: number;
  orderMailAttempts: number;
  orderSource: number;
  /** Naming none of the three, transaction control aside (the provider's health, Postgres's clock, ...). */
  other: number;
}

export function tally(statements: readonly string[]): StatementTally {
  const count = (test: (text: string) => boolean) => statements.filter(test).length;
  const control = (text: string) => /^\s*(BEGIN|COMMIT|ROLLBACK)\b/i.test(text);
  const log = (text: string) => /\border_mail_log\b/i.test(text);
  const attempts = (text: string) => /\border_mail_attempts\b/i.test(text);
  const source = (text: string) => ORDER_SOURCE.test(text);
  return {
    all: statements.length,
    transactionControl: count(control),
    orderMailLog: count(log),
    orderMailAttempts: count(attempts),
    orderSource: count(source),
    other: count((text) => !control(text) && !log(text) && !attempts(text) && !source(text)),
  };
}

export interface StatementCapture {
  /** The statements sent since the last take, in order. */
  take(): string[];
  stop(): void;
}

/** Starts counting the statements of every pool whose application_name is `applicationName`. */
export function captureStatements(applicationName: string): StatementCapture {
  let seen: string[] = [];
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const counting = function (
    this: { connectionParameters?: { application_name?: string } },
    ...args: unknown[]
  ): unknown {
    if (this.connectionParameters?.application_name === applicationName) {
      const query = args[0];
      const text =
        typeof query === 'string'
          ? query
          : query !== null && typeof query === 'object' && 'text' in query && typeof query.text === 'string'
            ? query.text
            : null;
      if (text !== null) seen.push(text);
    }
    return original.apply(this, args);
  };
  proto.query = counting;
  return {
    take() {
      const taken = seen;
      seen = [];
      return taken;
    },
    stop() {
      if (proto.query === counting) proto.query = original;
    },
  };
}
