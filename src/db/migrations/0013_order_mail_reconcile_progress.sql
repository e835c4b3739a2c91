-- How far the reconciliation sweep has looked, per namespace: every confirmed order up to checked_through had a
-- log row, or was started, by a sweep that went through to its end. The next sweep reads only the orders
-- confirmed since then (less an overlap), instead of its whole look-back window every few minutes
-- (src/db/reconcileProgress.ts). No row: the next sweep reads the whole window, as the first one does.
CREATE TABLE order_mail_reconcile_progress (
    namespace        TEXT        PRIMARY KEY,
    checked_through  TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
