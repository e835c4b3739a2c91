-- Operators act under logins of their own (docs/operating.md "Who you are"; docs/production.md).
--
-- Until now `npm run ops` ran as the workers' login and wrote the operator's name it was told (--operator,
-- $OPERATOR): a taken-over worker could write acts in anyone's name. Now:
--   - order_mail_operators is the operators' group; each operator has a login of their own in it (made by
--     `npm run db:roles` with OPS_DATABASE_URL, or by a DBA). 0050's trigger already counts its members' writes
--     as this service's.
--   - An act's operator is its session's login, set by the database whatever the insert says.
--   - The workers' role may no longer write acts. What a worker itself notices (a reset made in the Web UI or
--     with `temporal workflow reset`) goes to order_mail_observed_resets, as an observation: who Temporal says
--     reset, and which worker login saw it, not an act in an operator's name.
DO $role$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_mail_operators') THEN
    BEGIN
      CREATE ROLE order_mail_operators NOLOGIN;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'role order_mail_operators does not exist, and % may not create roles', current_user
          USING HINT = 'Create it first: CREATE ROLE order_mail_operators NOLOGIN; or run npm run db:roles (docs/production.md).';
    END;
  END IF;
END
$role$;

-- The operator is whoever is logged in. db_session_user (0011) stays, equal to it from now on.
CREATE OR REPLACE FUNCTION order_mail_operator_acts_session_user() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.operator := session_user;
  NEW.db_session_user := session_user;
  RETURN NEW;
END $$;

-- Resets a worker observed in Temporal's history (src/activities/resetAct.ts), once per new run.
CREATE TABLE order_mail_observed_resets (
    id                   BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id             BIGINT      NOT NULL REFERENCES orders (id),
    new_run_id           TEXT        NOT NULL,
    base_run_id          TEXT        NOT NULL,
    -- What Temporal's history says: the reason given, and the identity on the reset event (Temporal's own).
    reason               TEXT        NOT NULL,
    temporal_identity    TEXT        NOT NULL,
    reset_event_id       BIGINT,
    reset_at             TIMESTAMPTZ,
    base_run_terminated  JSONB,
    -- Who wrote this row: the database login (set here, whatever the insert says) and the worker's identity.
    recorded_by          TEXT        NOT NULL DEFAULT session_user,
    worker_identity      TEXT,
    observed_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    row_after            JSONB,
    UNIQUE (order_id, new_run_id)
);

CREATE FUNCTION order_mail_observed_resets_recorded_by() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.recorded_by := session_user;
  RETURN NEW;
END $$;

CREATE TRIGGER order_mail_observed_resets_recorded_by BEFORE INSERT ON order_mail_observed_resets
  FOR EACH ROW EXECUTE FUNCTION order_mail_observed_resets_recorded_by();
CREATE TRIGGER order_mail_observed_resets_append_only BEFORE UPDATE OR DELETE ON order_mail_observed_resets
  FOR EACH ROW EXECUTE FUNCTION order_mail_refuse_audit_change();

REVOKE INSERT ON order_mail_operator_acts FROM order_mail_worker;
GRANT SELECT, INSERT ON order_mail_observed_resets TO order_mail_worker;

-- What `npm run ops` does, and nothing more: read the mail tables (every one this role made, but the webhook
-- receiver's replay tokens; and those later migrations make); resolve (one UPDATE of the row, the cut-off
-- attempt's audit row, the act); retry's act; the providers' operator mode.
DO $read$
DECLARE
  mail_table TEXT;
BEGIN
  FOR mail_table IN
    SELECT c.relname FROM pg_class AS c
     WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind IN ('r', 'p')
       AND c.relname LIKE 'order\_mail\_%' AND c.relname <> 'order_mail_webhook_deliveries'
       AND pg_has_role(current_user, c.relowner, 'USAGE')
  LOOP
    EXECUTE format('GRANT SELECT ON %I TO order_mail_operators', mail_table);
  END LOOP;
END
$read$;
GRANT UPDATE ON order_mail_log TO order_mail_operators;
GRANT INSERT ON order_mail_attempts, order_mail_operator_acts TO order_mail_operators;
GRANT INSERT, UPDATE ON order_mail_provider_health TO order_mail_operators;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO order_mail_operators;

-- Whether an order exists: its id only. Where the shop's role owns orders, `npm run db:roles` grants it (or
-- that role: GRANT SELECT (id) ON orders TO order_mail_operators).
DO $orders$
BEGIN
  IF to_regclass('orders') IS NOT NULL
     AND pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = to_regclass('orders')), 'USAGE') THEN
    GRANT SELECT (id) ON orders TO order_mail_operators;
  END IF;
END
$orders$;
