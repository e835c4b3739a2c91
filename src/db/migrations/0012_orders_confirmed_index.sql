-- The reconciliation sweep reads confirmed orders by (confirmed_at, id) (queries/confirmedOrdersWithoutMail.sql).
-- Without an index it reads the whole orders table every few minutes: 1.7 s per sweep at 10 million orders,
-- growing with the table (docs/benchmarks.md, "Our Postgres as it grows"). Created only where the table has
-- the columns the shipped query reads and no index leads with confirmed_at already. On an adopter's large,
-- busy orders table, create it beforehand without blocking writes, under this name, and this is a no-op:
--   CREATE INDEX CONCURRENTLY orders_confirmed_at_id_idx ON orders (confirmed_at, id) WHERE status = 'confirmed';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'orders' AND column_name = 'confirmed_at')
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = 'orders' AND column_name = 'status')
       AND NOT EXISTS (SELECT 1 FROM pg_index AS i
                         JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                        WHERE i.indrelid = to_regclass('orders') AND a.attname = 'confirmed_at')
    THEN
        CREATE INDEX orders_confirmed_at_id_idx ON orders (confirmed_at, id) WHERE status = 'confirmed';
    END IF;
END
$$;
