// One builder for parameterised SQL: `${value}` in sql`…` becomes $n when built, so a shared fragment carries
// its own values and never depends on another statement's numbering.
import type { QueryResultRow } from 'pg';
import type { Database } from './pool';

export class SqlFragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/** A statement or a fragment of one. A nested fragment is inlined with its values. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): SqlFragment {
  return new SqlFragment(strings, values);
}

export interface BuiltStatement {
  text: string;
  values: unknown[];
}

export function buildSql(fragment: SqlFragment): BuiltStatement {
  const values: unknown[] = [];
  const append = (part: SqlFragment): string => {
    let text = part.strings[0] ?? '';
    part.values.forEach((value, index) => {
      if (value instanceof SqlFragment) text += append(value);
      else {
        values.push(value);
        text += `$${values.length}`;
      }
      text += part.strings[index + 1] ?? '';
    });
    return text;
  };
  const text = append(fragment);
  return { text, values };
}

/** Runs a sql`…` statement on `db`. */
export function runSql<Row extends QueryResultRow = QueryResultRow>(
  db: Database,
  fragment: SqlFragment,
): Promise<{ rows: Row[]; rowCount: number }> {
  const { text, values } = buildSql(fragment);
  return db.query<Row>(text, values);
}
