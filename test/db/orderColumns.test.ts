// One list of the shop's columns the workers read (src/db/orderColumns.ts): migration 0030, which grants them
// in SQL, names the same ones, and the service's reads of the shop's tables name no other.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIRMED_ORDERS_QUERY_PATH } from '../../src/db/confirmedOrders';
import { MIGRATIONS_DIRECTORY } from '../../src/db/migrator';
import { WORKER_READS_COLUMNS } from '../../src/db/orderColumns';

describe('the columns the workers read', () => {
  it('are the ones migration 0030 grants', () => {
    const sql = readFileSync(path.join(MIGRATIONS_DIRECTORY, '0030_orders_column_grants.sql'), 'utf8');
    const granted = /wanted CONSTANT JSONB := '([^']+)'/.exec(sql)?.[1];
    expect(JSON.parse(granted!)).toEqual(WORKER_READS_COLUMNS);
  });

  it('cover every column the service reads of orders', () => {
    const reads = [
      readFileSync(path.join(__dirname, '../../src/db/orders.ts'), 'utf8'),
      readFileSync(CONFIRMED_ORDERS_QUERY_PATH, 'utf8').replace(/^--.*$/gm, ''),
    ].join('\n');
    for (const column of ['customer_name', 'customer_email', 'ordered_at', 'status', 'confirmed_at']) {
      expect(reads).toContain(column);
      expect(WORKER_READS_COLUMNS.orders).toContain(column);
    }
  });
});
