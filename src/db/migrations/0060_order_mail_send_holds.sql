-- A hold on every send, or on one provider's (docs/operating.md "Holding every send"): `npm run ops -- hold`
-- writes a row here, `resume` deletes it. The dispatch fence's one statement refuses while a row covers the
-- attempt's provider (src/activities/dispatchFence.ts), so a hold is in force from its commit on, across
-- worker and server restarts. Only operators set or lift one; the workers read it.
CREATE TABLE order_mail_send_holds (
    -- '*' holds every provider; otherwise the provider's name as MAIL_PROVIDERS spells it.
    scope      TEXT        PRIMARY KEY CHECK (btrim(scope) <> ''),
    -- The operator's login, set by the database whatever the insert says (as on the acts, 0057).
    held_by    TEXT        NOT NULL DEFAULT session_user,
    held_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    reason     TEXT        NOT NULL CHECK (btrim(reason) <> '')
);

CREATE FUNCTION order_mail_send_holds_held_by() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.held_by := session_user;
  RETURN NEW;
END $$;

CREATE TRIGGER order_mail_send_holds_held_by BEFORE INSERT OR UPDATE ON order_mail_send_holds
  FOR EACH ROW EXECUTE FUNCTION order_mail_send_holds_held_by();

-- 0010's default privileges give the workers INSERT on every new table: not on this one.
REVOKE ALL ON order_mail_send_holds FROM order_mail_worker;
GRANT SELECT ON order_mail_send_holds TO order_mail_worker;
GRANT SELECT, INSERT, DELETE ON order_mail_send_holds TO order_mail_operators;

-- A hold and its lifting are operators' acts like a retry or a resolve, but of no one order: the act names its
-- scope and the orders it released in `details`.
ALTER TABLE order_mail_operator_acts ALTER COLUMN order_id DROP NOT NULL,
  DROP CONSTRAINT order_mail_operator_acts_act_check,
  ADD CONSTRAINT order_mail_operator_acts_act_check
    CHECK (act IN ('retry', 'resolve', 'reset', 'hold', 'resume')),
  ADD CONSTRAINT order_mail_operator_acts_order_named CHECK (order_id IS NOT NULL OR act IN ('hold', 'resume'));
