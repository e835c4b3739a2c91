-- Confirmed orders that have no mail log row yet: the reconciliation sweep (src/workflows/reconcileOrderMails.ts)
-- starts their confirmation mail (docs/design.md §7, G3). It reads the shop's orders through the order contract
-- (order_mail_source.orders_for_mail, src/db/orderContract.ts): "confirmed" is status = 'confirmed' there, and
-- a shop says what that means in its view, not here.
--
-- Parameters:
--   $1  grace, in seconds: orders confirmed more recently than this are left to the order service's own start
--   $2  not before (timestamptz): orders confirmed earlier are never mailed by the sweep (the look-back window,
--       or the go-live time: adopting this service must not mail every past customer)
--   $3  cursor, confirmed_at as text (NULL for the first batch), and
--   $4  cursor, order id: only orders after (confirmed_at, order_id) = ($3, $4), for keyset pagination
--   $5  batch size
-- Output, in ascending (confirmed_at, order_id) order:
--   order_id      the order id, as text
--   cursor_time   confirmed_at as text (text keeps Postgres' microseconds, which a JavaScript Date would lose)
--
-- The view is inlined into this statement, so each batch stays a short range scan when the shop's table has an
-- index on the columns the view maps to confirmed_at and order_id, partial on its confirmed status, e.g. the
-- demo's  CREATE INDEX ON orders (confirmed_at, id) WHERE status = 'confirmed';  (docs/adoption.md).
SELECT o.order_id::text AS order_id,
       o.confirmed_at::text AS cursor_time
  FROM order_mail_source.orders_for_mail AS o
 WHERE o.status = 'confirmed'
   AND o.confirmed_at <= now() - make_interval(secs => $1::double precision)
   AND o.confirmed_at >= $2::timestamptz
   AND ($3::text IS NULL OR (o.confirmed_at, o.order_id) > ($3::timestamptz, $4::bigint))
   AND NOT EXISTS (SELECT 1 FROM order_mail_log AS log WHERE log.order_id = o.order_id)
 ORDER BY o.confirmed_at, o.order_id
 LIMIT $5
