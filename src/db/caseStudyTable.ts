// Recognises the case study's own order_mail_log (docs/adoption.md), the only foreign shape the migrator adopts.
import type { Client } from 'pg';

export interface CaseStudyTable {
  kind: 'case-study';
  rows: { sent: number; failed: number; sending: number };
}

export type MailLogTableFound = { kind: 'absent' } | CaseStudyTable | { kind: 'other'; columns: string[] };

// Column → the types the case study's statements work with (an INT order id is as good as a BIGINT one).
const CASE_STUDY_COLUMNS: Record<string, readonly string[]> = {
  order_id: ['bigint', 'integer'],
  state: ['text', 'character varying'],
  attempts: ['integer', 'bigint', 'smallint'],
  updated_at: ['timestamp with time zone', 'timestamp without time zone'],
};

/** What `order_mail_log` in the current schema is: absent, the case study's, or something else. */
export async function describeCaseStudyTable(client: Pick<Client, 'query'>): Promise<MailLogTableFound> {
  // pg_attribute: information_schema hides a table the login may not use yet, which would read as no table.
  const { rows: columns } = await client.query<{ name: string; type: string }>(
    `SELECT attname AS name, format_type(atttypid, NULL) AS type FROM pg_attribute
      WHERE attrelid = to_regclass('order_mail_log') AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
  );
  if (columns.length === 0) return { kind: 'absent' };
  const matches =
    columns.length === Object.keys(CASE_STUDY_COLUMNS).length &&
    columns.every((column) => CASE_STUDY_COLUMNS[column.name]?.includes(column.type) === true);
  if (!matches) return { kind: 'other', columns: columns.map((column) => `${column.name} ${column.type}`) };
  const { rows } = await client.query<{ state: string; count: number }>(
    `SELECT state, count(*)::int AS count FROM order_mail_log GROUP BY state`,
  );
  const count = (state: string): number => rows.find((row) => row.state === state)?.count ?? 0;
  const unexpected = rows.filter((row) => !['sent', 'failed', 'sending'].includes(row.state));
  if (unexpected.length > 0) {
    return {
      kind: 'other',
      columns: [`state values ${unexpected.map((row) => JSON.stringify(row.state)).join(', ')}`],
    };
  }
  return {
    kind: 'case-study',
    rows: { sent: count('sent'), failed: count('failed'), sending: count('sending') },
  };
}
