-- The shop's orders by contract, not by table name (docs/adoption.md "The order contract", docs/design.md §9):
-- the service reads an order only through two views in the schema order_mail_source, whose names, columns and
-- types are fixed (src/db/orderContract.ts), and the mail tables no longer depend on a table named `orders`.
--   1. The mail tables' foreign keys to orders (id) are dropped: the claim checks the order through the
--      contract in its own statement, and erasing an order is no longer blocked by our rows.
--   2. The schema order_mail_source is made where missing; the workers and the operators may use it.
--   3. Where `orders` and `order_items` are the demo's (0001, 0002, owned by this role: development, tests, the
--      demo, a case study modelled on them), the demo provides the contract: two views over them, with their owner's rights, and
--      the worker role loses its grants on the base tables (it reads the views, nothing else).
DO $foreign_keys$
DECLARE
  reference RECORD;
BEGIN
  FOR reference IN
    SELECT con.conrelid::regclass AS mail_table, con.conname AS name
      FROM pg_constraint AS con JOIN pg_class AS c ON c.oid = con.conrelid
     WHERE con.contype = 'f' AND con.confrelid = to_regclass('orders')
       AND c.relname LIKE 'order\_mail\_%' AND pg_has_role(current_user, c.relowner, 'USAGE')
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', reference.mail_table, reference.name);
  END LOOP;
END
$foreign_keys$;

-- `npm run db:roles` makes the schema for the migration login (which may not create schemas); a shop may make it
-- itself, owned by its own role, and write the views there. Either way the worker checks it at start.
DO $schema$
BEGIN
  IF to_regnamespace('order_mail_source') IS NULL THEN
    IF NOT has_database_privilege(current_database(), 'CREATE') THEN
      RAISE WARNING 'schema order_mail_source not made: % may not create schemas here', current_user
        USING HINT = 'Run npm run db:roles, or its owner runs: CREATE SCHEMA order_mail_source;';
      RETURN;
    END IF;
    CREATE SCHEMA order_mail_source;
  END IF;
  GRANT USAGE ON SCHEMA order_mail_source TO order_mail_worker, order_mail_operators;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'could not grant USAGE on schema order_mail_source: % does not own it', current_user
    USING HINT = 'Its owner runs: GRANT USAGE ON SCHEMA order_mail_source TO order_mail_worker, order_mail_operators;';
END
$schema$;

DO $demo$
DECLARE
  demo_columns CONSTANT JSONB := '{"orders": ["id", "customer_name", "customer_email", "ordered_at", "status", "confirmed_at"],
                                   "order_items": ["order_id", "line_no", "product_name", "quantity", "unit_price_yen"]}';
  shop_table TEXT;
BEGIN
  IF to_regnamespace('order_mail_source') IS NULL
     OR NOT has_schema_privilege('order_mail_source', 'CREATE')
     OR to_regclass('order_mail_source.orders_for_mail') IS NOT NULL
     OR to_regclass('order_mail_source.order_items_for_mail') IS NOT NULL THEN
    RETURN;
  END IF;
  FOR shop_table IN SELECT jsonb_object_keys(demo_columns) LOOP
    IF (SELECT count(*) FROM pg_attribute
         WHERE attrelid = to_regclass(shop_table) AND attnum > 0 AND NOT attisdropped
           AND attname IN (SELECT jsonb_array_elements_text(demo_columns -> shop_table)))
       <> jsonb_array_length(demo_columns -> shop_table)
       -- A shop's own tables (another role owns them) get the shop's own views, written by their owner.
       OR NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = to_regclass(shop_table)), 'USAGE') THEN
      RETURN;
    END IF;
  END LOOP;
  -- Owner's rights (security_invoker off): the worker needs SELECT on the views only, never on the tables.
  CREATE VIEW order_mail_source.orders_for_mail AS
    SELECT o.id AS order_id,
           o.customer_name,
           o.customer_email,
           o.ordered_at,
           o.confirmed_at,
           o.status,
           (SELECT COALESCE(sum(i.unit_price_yen * i.quantity), 0) FROM order_items AS i WHERE i.order_id = o.id)::bigint
             AS amount_minor,
           'JPY'::text AS currency
      FROM orders AS o;
  CREATE VIEW order_mail_source.order_items_for_mail AS
    SELECT i.order_id, i.line_no, i.product_name, i.quantity, i.unit_price_yen AS unit_amount_minor
      FROM order_items AS i;
  GRANT SELECT ON order_mail_source.orders_for_mail, order_mail_source.order_items_for_mail TO order_mail_worker;
  -- `npm run ops` asks whether an order exists, and nothing more (0057's default privileges gave it every column).
  REVOKE SELECT ON order_mail_source.orders_for_mail, order_mail_source.order_items_for_mail FROM order_mail_operators;
  GRANT SELECT (order_id) ON order_mail_source.orders_for_mail TO order_mail_operators;
  -- The workers read the views; the base tables are no longer theirs to read.
  FOR shop_table IN SELECT jsonb_object_keys(demo_columns) LOOP
    EXECUTE format('REVOKE SELECT ON %I FROM order_mail_worker, order_mail_operators', shop_table);
    EXECUTE format('REVOKE SELECT (%s) ON %I FROM order_mail_worker, order_mail_operators',
                   (SELECT string_agg(quote_ident(name), ', ') FROM jsonb_array_elements_text(demo_columns -> shop_table) AS name),
                   shop_table);
  END LOOP;
END
$demo$;
