-- Acts on many orders (docs/operating.md "Acting on many orders"): `npm run ops -- bulk … --dry-run` saves a
-- selection here (its filter, the sorted order ids and a hash over them); `bulk run <id>` acts on exactly it,
-- one audited act per order (order_mail_operator_acts), and keeps each order's progress beside it, so an
-- interrupted run resumes by its id and never acts twice on one order. Only operators write these tables.
CREATE TABLE order_mail_bulk_acts (
    id            BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- 'retry' or 'resolve'; `as` is resolve's 'sent' or 'failed'.
    verb          TEXT        NOT NULL CHECK (verb IN ('retry', 'resolve')),
    resolve_as    TEXT        CHECK ((verb = 'resolve') = (resolve_as IN ('sent', 'failed'))),
    -- The filter as the dry run resolved it (absolute times), to select again at the run.
    filter        JSONB       NOT NULL,
    reason        TEXT        NOT NULL CHECK (btrim(reason) <> ''),
    max_orders    INTEGER     NOT NULL CHECK (max_orders > 0),
    order_count   INTEGER     NOT NULL CHECK (order_count >= 0),
    -- SHA-256 (hex) over the selected order ids, sorted as numbers, one per line.
    selection_sha256 TEXT     NOT NULL CHECK (selection_sha256 ~ '^[0-9a-f]{64}$'),
    -- Who saved and who started it: the database logins, set here whatever the statement says (as on acts, 0057).
    selected_by   TEXT        NOT NULL DEFAULT session_user,
    selected_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_by    TEXT,
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ
);

-- One row per selected order: 'pending' until acted on; 'acting' once the run began its act (committed before
-- a Temporal request, so a resume knows that order may have been acted on); 'done' with the act written in the
-- same transaction; 'refused' when the per-order act refused (nothing changed for it).
CREATE TABLE order_mail_bulk_act_orders (
    bulk_id       BIGINT      NOT NULL REFERENCES order_mail_bulk_acts (id),
    order_id      BIGINT      NOT NULL REFERENCES orders (id),
    status        TEXT        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'acting', 'done', 'refused')),
    -- The run a retry was about to reset (NULL: none existed, the retry starts one), written with 'acting'.
    base_run_id   TEXT,
    act_id        BIGINT      REFERENCES order_mail_operator_acts (id),
    refusal       TEXT,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (bulk_id, order_id),
    CHECK ((status = 'done') = (act_id IS NOT NULL))
);

CREATE FUNCTION order_mail_bulk_acts_logins() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.selected_by := session_user;
  ELSIF NEW.started_at IS DISTINCT FROM OLD.started_at THEN
    NEW.started_by := session_user;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER order_mail_bulk_acts_logins BEFORE INSERT OR UPDATE ON order_mail_bulk_acts
  FOR EACH ROW EXECUTE FUNCTION order_mail_bulk_acts_logins();

-- 0010's default privileges give the workers INSERT on every new table: not on these.
REVOKE ALL ON order_mail_bulk_acts, order_mail_bulk_act_orders FROM order_mail_worker;
GRANT SELECT, INSERT, UPDATE ON order_mail_bulk_acts, order_mail_bulk_act_orders TO order_mail_operators;
