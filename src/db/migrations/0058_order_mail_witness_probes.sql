-- Witness probes (docs/design.md §5, "What counts as evidence"; docs/providers.md, "A witness on demand"): a
-- send the service makes itself, to the shop's sink address (MAIL_WITNESS_SINK_ADDRESS), when an unknown waits
-- for a freshness witness in a quiet period and none comes. Its one use is as a witness, by the same rule as a
-- customer's send: its 2xx came after the unknown attempt's end. One row per probe: written at its dispatch
-- fence (dispatched_at, Postgres's clock), and its answer once; the table is the probes' audit. A probe is
-- never an order's: its probe_id is no number, and it has no row in order_mail_log or order_mail_attempts.
CREATE TABLE order_mail_witness_probes (
    id                      BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The identity its metadata carries where an order id would: never a bigint, so never an order's.
    probe_id                TEXT        NOT NULL UNIQUE CHECK (probe_id ~ '^witness-probe-[0-9a-f-]{36}$'),
    send_key                TEXT        NOT NULL UNIQUE,
    -- Where it went, as the dispatch fence records an attempt's destination (migration 0015).
    provider                TEXT        NOT NULL,
    origin                  TEXT        NOT NULL,
    scope                   TEXT,
    credential_fingerprint  TEXT,
    dispatched_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- How long after dispatched_at its request may still have been under way (the transport's deadline).
    send_timeout_ms         INTEGER     NOT NULL CHECK (send_timeout_ms > 0),
    -- Its answer, written once; NULL while in flight, or for good when its worker died before the answer.
    outcome                 TEXT        CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown')),
    http_status             INTEGER,
    error_code              TEXT,
    answered_at             TIMESTAMPTZ,
    recorded_by             TEXT        NOT NULL DEFAULT session_user,
    worker_identity         TEXT        NOT NULL
);

-- The witness query (src/db/freshnessWitness.ts) and the rate limit ask by destination and dispatch time.
CREATE INDEX order_mail_witness_probes_destination
    ON order_mail_witness_probes (provider, origin, dispatched_at);

-- Only this service writes it (0050's rule, as for order_mail_log): a row is inserted at a probe's fence and
-- answered once; nothing else changes, and only the owner deletes (pruning by hand).
CREATE FUNCTION order_mail_witness_probes_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE') THEN
      RETURN OLD;
    END IF;
    RAISE EXCEPTION 'order_mail_witness_probes: DELETE refused for role %', session_user
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NOT order_mail_session_is_service() THEN
    RAISE EXCEPTION 'order_mail_witness_probes is written by this service only: % refused for role %', TG_OP, session_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Its rows are the probes'' audit (docs/operating.md, "Witness probes").';
  END IF;
  IF TG_OP = 'INSERT' THEN
    NEW.recorded_by := session_user;
    NEW.dispatched_at := now();
    NEW.outcome := NULL;
    NEW.http_status := NULL;
    NEW.error_code := NULL;
    NEW.answered_at := NULL;
    RETURN NEW;
  END IF;
  -- The answer, once: everything the fence wrote stays as it was.
  IF OLD.outcome IS NOT NULL OR NEW.outcome IS NULL
     OR (NEW.id, NEW.probe_id, NEW.send_key, NEW.provider, NEW.origin, NEW.dispatched_at, NEW.send_timeout_ms,
         NEW.recorded_by, NEW.worker_identity)
        IS DISTINCT FROM
        (OLD.id, OLD.probe_id, OLD.send_key, OLD.provider, OLD.origin, OLD.dispatched_at, OLD.send_timeout_ms,
         OLD.recorded_by, OLD.worker_identity)
     OR NEW.scope IS DISTINCT FROM OLD.scope
     OR NEW.credential_fingerprint IS DISTINCT FROM OLD.credential_fingerprint THEN
    RAISE EXCEPTION 'order_mail_witness_probes: a probe''s answer is written once, and nothing else changes'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  NEW.answered_at := now();
  RETURN NEW;
END $$;

CREATE TRIGGER order_mail_witness_probes_guard BEFORE INSERT OR UPDATE OR DELETE ON order_mail_witness_probes
  FOR EACH ROW EXECUTE FUNCTION order_mail_witness_probes_guard();

-- Workers write probes and their answers (0010's default privileges give SELECT and INSERT; the answer is an
-- UPDATE). Operators read it (0057's default privileges). The webhook receiver's role gets nothing.
GRANT SELECT, INSERT, UPDATE ON order_mail_witness_probes TO order_mail_worker;
