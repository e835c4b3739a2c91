-- The webhook receiver's role (npm run webhooks, docs/production.md). It faces the internet, so it may do the
-- least of any role: append provider events, append and forget replay tokens, and read the migrations table
-- to check the schema before it serves. Nothing on orders, order_items or order_mail_log: a receiver taken
-- over reads no customer's name or address and settles no mail. It runs no DDL (it owns nothing).
--
-- Made here if missing and this role may make roles (development, tests); in production `npm run db:roles`
-- or a DBA makes it first, as for order_mail_worker (0010).
DO $role$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_mail_webhooks') THEN
    BEGIN
      CREATE ROLE order_mail_webhooks NOLOGIN;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'role order_mail_webhooks does not exist, and % may not create roles', current_user
          USING HINT = 'Create it first: CREATE ROLE order_mail_webhooks NOLOGIN; or run npm run db:roles (docs/production.md).';
    END;
  END IF;
END
$role$;

-- INSERT ... ON CONFLICT (columns) DO NOTHING must read its conflict target's columns: the event's key only,
-- never what an event says.
GRANT INSERT ON order_mail_provider_events TO order_mail_webhooks;
GRANT SELECT (provider, provider_event_id) ON order_mail_provider_events TO order_mail_webhooks;
-- The replay guard: a token is inserted once (a conflict is a replay) and forgotten past the signature
-- window (DELETE ... WHERE signed_at < $1).
GRANT INSERT, DELETE ON order_mail_webhook_deliveries TO order_mail_webhooks;
GRANT SELECT (provider, token, signed_at) ON order_mail_webhook_deliveries TO order_mail_webhooks;
GRANT SELECT ON order_mail_schema_migrations TO order_mail_webhooks;
