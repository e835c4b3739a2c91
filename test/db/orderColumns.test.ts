// The demo's columns migration 0030 granted the workers (src/db/orderColumns.ts, still checked for a shop that
// adopts through the older migrations); since 0063 the service reads orders only through the order contract.
import { globSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS_DIRECTORY } from '../../src/db/migrator';
import { WORKER_READS_COLUMNS } from '../../src/db/orderColumns';
import { ORDER_ITEMS_VIEW, ORDER_SOURCE_SCHEMA, ORDERS_VIEW } from '../../src/db/orderContract';

describe('the columns the workers read', () => {
  it('are the ones migration 0030 grants', () => {
    const sql = readFileSync(path.join(MIGRATIONS_DIRECTORY, '0030_orders_column_grants.sql'), 'utf8');
    const granted = /wanted CONSTANT JSONB := '([^']+)'/.exec(sql)?.[1];
    expect(JSON.parse(granted!)).toEqual(WORKER_READS_COLUMNS);
  });

  it("are no longer read by the service: every read of an order names the contract's views", () => {
    // Every statement in src/ (the landed migrations aside), wherever a statement lives.
    const root = path.join(__dirname, '../../src');
    const sources = globSync('**/*.{ts,sql}', { cwd: root, exclude: ['db/migrations/**'] }).map((file) =>
      readFileSync(path.join(root, file), 'utf8').replace(/^\s*(--|\/\/).*$/gm, ''),
    );
    expect(sources.length).toBeGreaterThan(50);
    const reads = sources.join('\n');
    expect(reads).not.toMatch(/\b(FROM|JOIN)\s+(orders|order_items)\b/i);
    for (const view of [ORDERS_VIEW, ORDER_ITEMS_VIEW])
      expect(reads).toContain(`${ORDER_SOURCE_SCHEMA}.${view}`);
  });
});
