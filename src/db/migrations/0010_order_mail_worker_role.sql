-- Least privilege (docs/production.md). Migrations run as their own step with their own role (the owner of
-- these tables); workers run as members of order_mail_worker, which may read the orders and write the mail
-- tables, and nothing else: no DDL (it owns nothing and may create nothing), no DELETE, and on the audit
-- tables (attempts, late answers, operator acts) no UPDATE either. The audit tables also refuse UPDATE and
-- DELETE by a trigger, so a grant made by mistake does not open them: UPDATE for everyone, DELETE for all but
-- the tables' owner (a retention job runs as it).
--
-- Roles belong to the cluster, not the database: order_mail_worker is made here if it is missing and this
-- role may make it (development, tests); in production `npm run db:roles` or a DBA makes it first.
DO $role$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_mail_worker') THEN
    BEGIN
      CREATE ROLE order_mail_worker NOLOGIN;
    EXCEPTION
      -- Made at the same moment by the migration of another database of this cluster.
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'role order_mail_worker does not exist, and % may not create roles', current_user
          USING HINT = 'Create it first: CREATE ROLE order_mail_worker NOLOGIN; or run npm run db:roles (docs/production.md).';
    END;
  END IF;
END
$role$;

-- The orders are the shop's: read only. Granted here where this role may grant it (it made them, as in
-- development); where the shop's own role owns them, that role grants it, and a worker refuses to start
-- until it has (src/db/schemaReady.ts).
DO $orders$
BEGIN
  GRANT SELECT ON orders, order_items TO order_mail_worker;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'could not grant SELECT on orders and order_items to order_mail_worker: % does not own them', current_user
    USING HINT = 'Their owner runs: GRANT SELECT ON orders, order_items TO order_mail_worker;';
END
$orders$;

GRANT SELECT, INSERT, UPDATE ON order_mail_log TO order_mail_worker;
GRANT SELECT, INSERT ON order_mail_attempts, order_mail_late_answers, order_mail_operator_acts TO order_mail_worker;
GRANT SELECT ON order_mail_schema_migrations TO order_mail_worker;
-- Tables later migrations make (they are mail tables, made by this role) can be read and appended to; anything
-- more a migration grants itself.
ALTER DEFAULT PRIVILEGES GRANT SELECT, INSERT ON TABLES TO order_mail_worker;

CREATE FUNCTION order_mail_refuse_audit_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
  IF TG_OP = 'DELETE'
     AND pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE') THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% is append-only: % refused for role %', TG_TABLE_NAME, TG_OP, session_user
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'An audit row is never changed; an answer that comes late goes to order_mail_late_answers.';
END $$;

CREATE TRIGGER order_mail_attempts_append_only BEFORE UPDATE OR DELETE ON order_mail_attempts
  FOR EACH ROW EXECUTE FUNCTION order_mail_refuse_audit_change();
CREATE TRIGGER order_mail_late_answers_append_only BEFORE UPDATE OR DELETE ON order_mail_late_answers
  FOR EACH ROW EXECUTE FUNCTION order_mail_refuse_audit_change();
CREATE TRIGGER order_mail_operator_acts_append_only BEFORE UPDATE OR DELETE ON order_mail_operator_acts
  FOR EACH ROW EXECUTE FUNCTION order_mail_refuse_audit_change();
