-- Column-level grants on the shop's tables (issue 22): the worker role reads only the columns the service uses
-- (src/db/orderColumns.ts), not every column of `orders` (0010 granted the whole table). Where this role owns
-- the tables (development, tests, a database this service made), it narrows the grant here. Where the shop's
-- own role owns them, db:migrate has already checked, before applying anything, that the grant is narrow
-- (src/db/migrationPrerequisites.ts) and named the statements for their owner otherwise: nothing to do here.
DO $columns$
DECLARE
  wanted CONSTANT JSONB := '{"orders": ["id", "customer_name", "customer_email", "ordered_at", "status", "confirmed_at"],
                             "order_items": ["order_id", "line_no", "product_name", "quantity", "unit_price_yen"]}';
  shop_table TEXT;
  granted TEXT;
BEGIN
  FOR shop_table IN SELECT jsonb_object_keys(wanted) LOOP
    CONTINUE WHEN to_regclass(shop_table) IS NULL
               OR NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = to_regclass(shop_table)), 'USAGE');
    SELECT string_agg(quote_ident(c.column_name), ', ' ORDER BY c.ordinal_position) INTO granted
      FROM information_schema.columns AS c
     WHERE c.table_schema = current_schema() AND c.table_name = shop_table
       AND c.column_name IN (SELECT jsonb_array_elements_text(wanted -> shop_table));
    EXECUTE format('REVOKE SELECT ON %I FROM order_mail_worker', shop_table);
    IF granted IS NOT NULL THEN
      EXECUTE format('GRANT SELECT (%s) ON %I TO order_mail_worker', granted, shop_table);
    END IF;
  END LOOP;
END
$columns$;
