// How the mail-row tests put an order's rows in a from-state: one builder of the seed's INSERTs, which
// fromEveryState.test.ts runs inside the login's transaction and whoMayRun.test.ts commits as the admin.
import type pg from 'pg';
import type { Database } from '../../src/db/pool';

/** A row's columns, each value an SQL expression. */
export type Columns = Record<string, string>;

/** One audit row of an attempt; its state follows from its outcome (default `accepted`). */
export interface Audit {
  attempt: number;
  token: string;
  outcome?: string;
  unknownPolicy?: string;
  /** Claimed, dispatched and finished then (default an hour ago). */
  at?: string;
}

export const HOUR_AGO = "now() - interval '1 hour'";
export const run1 = (orderId: string): string => `default/${orderId}/run-1`;
export const run2 = (orderId: string): string => `default/${orderId}/run-2`;

function auditState(audit: Audit): 'sent' | 'failed' {
  const outcome = audit.outcome ?? 'accepted';
  return outcome === 'accepted' || audit.unknownPolicy === 'assume-sent' ? 'sent' : 'failed';
}

/** The order's row with `columns`, and its audit rows. */
export function seedStatements(orderId: string, columns: Columns, audits: readonly Audit[] = []): string[] {
  const row = { order_id: orderId, ...columns };
  const log = `INSERT INTO order_mail_log (${Object.keys(row).join(', ')})
               VALUES (${Object.values(row).join(', ')})`;
  const attempts = audits.map(
    (audit) => `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at,
                  dispatched_at, finished_at, state, outcome, unknown_policy, recorded_by)
                VALUES (${orderId}, ${audit.attempt}, '${audit.token}', 0, ${audit.at ?? HOUR_AGO},
                        ${audit.at ?? HOUR_AGO}, ${audit.at ?? HOUR_AGO},
                        '${auditState(audit)}',
                        '${audit.outcome ?? 'accepted'}',
                        ${audit.unknownPolicy === undefined ? 'NULL' : `'${audit.unknownPolicy}'`}, 'test')`,
  );
  return [log, ...attempts];
}

/** The statements take a Database; here it is one login's connection, inside its transaction. */
export function overClient(client: pg.Client): Database {
  return {
    async query(text: string, params: readonly unknown[] = []) {
      const result = await client.query<Record<string, unknown>>(text, params as unknown[]);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },
    transaction: () => Promise.reject(new Error('no nested transaction here')),
    close: () => Promise.resolve(),
  } as Database;
}
