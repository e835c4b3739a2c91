-- Who acted, as the database knows it, and resets made outside the ops CLI.
--
-- `operator` is the name the ops CLI was given (--operator, $OPERATOR, the OS user); db_session_user is the
-- database role the act was written with, set here by a trigger whatever the insert says. NULL on acts
-- recorded before this migration.
ALTER TABLE order_mail_operator_acts ADD COLUMN db_session_user TEXT;

CREATE FUNCTION order_mail_operator_acts_session_user() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.db_session_user := session_user;
  RETURN NEW;
END $$;

CREATE TRIGGER order_mail_operator_acts_session_user BEFORE INSERT ON order_mail_operator_acts
  FOR EACH ROW EXECUTE FUNCTION order_mail_operator_acts_session_user();

-- 'reset': a reset made in the Web UI (or with `temporal workflow reset`), recorded by the claim of the run it
-- started, with the reason and identity Temporal recorded (src/activities/resetAct.ts). Once per run.
ALTER TABLE order_mail_operator_acts DROP CONSTRAINT order_mail_operator_acts_act_check,
  ADD CONSTRAINT order_mail_operator_acts_act_check CHECK (act IN ('retry', 'resolve', 'reset'));
CREATE UNIQUE INDEX order_mail_operator_acts_reset_once ON order_mail_operator_acts (order_id, (details ->> 'newRunId'))
  WHERE act = 'reset';
