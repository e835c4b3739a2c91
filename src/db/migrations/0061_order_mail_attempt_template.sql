-- Which template rendered the mail an attempt sent (MAIL_TEMPLATE_DIR, src/mail/template/): the name its
-- mail.json gives and the SHA-256 of its files, so "which words did this customer get" has an answer after the
-- template changed. Nothing of the mail itself is stored, here or in Temporal's history.
--   order_mail_log.dispatch_template_*: set by the dispatch fence with the rest of what the request carries
--     (migration 0015); meaningful only while dispatched_at is set, like the other dispatch_* columns.
--   order_mail_attempts.template_*: copied when a dispatched attempt settles; NULL for an attempt that made no
--     request, and for attempts settled before this migration.
ALTER TABLE order_mail_log
    ADD COLUMN dispatch_template_name TEXT,
    ADD COLUMN dispatch_template_sha256 TEXT CHECK (dispatch_template_sha256 ~ '^[0-9a-f]{64}$');

ALTER TABLE order_mail_attempts
    ADD COLUMN template_name TEXT,
    ADD COLUMN template_sha256 TEXT CHECK (template_sha256 ~ '^[0-9a-f]{64}$');
