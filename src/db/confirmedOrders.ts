// Runs queries/confirmedOrdersWithoutMail.sql, kept as plain SQL so an adopter edits it without TypeScript.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from './pool';

export const CONFIRMED_ORDERS_QUERY_PATH = path.join(__dirname, 'queries', 'confirmedOrdersWithoutMail.sql');

/** Where the previous batch ended: (confirmed_at as Postgres text, order id). */
export interface ConfirmedOrderCursor {
  confirmedAt: string;
  orderId: string;
}

export interface ConfirmedOrdersBatch {
  orderIds: string[];
  /** Where the next batch starts; null when this batch was the last. */
  next: ConfirmedOrderCursor | null;
}

let queryText: Promise<string> | undefined;

export async function findConfirmedOrdersWithoutMail(
  db: Database,
  input: { graceMs: number; notBefore: Date; after: ConfirmedOrderCursor | null; limit: number },
): Promise<ConfirmedOrdersBatch> {
  // Read on first use, not on import; a failed read is retried next time rather than remembered.
  queryText ??= readFile(CONFIRMED_ORDERS_QUERY_PATH, 'utf8').catch((error: unknown) => {
    queryText = undefined;
    throw error;
  });
  const { rows } = await db.query<{ order_id: string; cursor_time: string }>(await queryText, [
    input.graceMs / 1000,
    input.notBefore,
    input.after?.confirmedAt ?? null,
    input.after?.orderId ?? '0',
    input.limit,
  ]);
  const last = rows.at(-1);
  return {
    orderIds: rows.map((row) => row.order_id),
    next:
      rows.length === input.limit && last !== undefined
        ? { confirmedAt: last.cursor_time, orderId: last.order_id }
        : null,
  };
}
