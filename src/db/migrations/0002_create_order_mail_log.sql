-- The source of truth for "was this order's confirmation mail sent" (DESIGN.md §4). One row per order.
-- Temporal history is kept only for the namespace's retention period; this row outlives it.
CREATE TABLE order_mail_log (
    order_id             BIGINT      PRIMARY KEY REFERENCES orders (id),
    state                TEXT        NOT NULL CHECK (state IN ('sending', 'sent', 'failed')),
    -- How many times the mail was claimed; the dispatch fence and the record are keyed on (claim_token, attempts).
    attempts             INT         NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    -- Who holds (or last held) the claim: '<namespace>/<workflow id>/<run id>' of the claiming run.
    claim_token          TEXT        NOT NULL,
    claimed_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- NULL until this attempt is about to make its HTTP request. A 'sending' row with NULL here is known
    -- never to have reached the Mail API.
    dispatched_at        TIMESTAMPTZ,
    outcome              TEXT        CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown')),
    -- Which policy settled an unknown outcome; written with the outcome so the log says how it was decided.
    unknown_policy       TEXT        CHECK (unknown_policy IN ('assume-sent', 'assume-failed')),
    provider_message_id  TEXT,
    http_status          INT,
    last_error           TEXT,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),

    -- A claim in progress has no outcome; a settled row always has one.
    CONSTRAINT order_mail_log_outcome_iff_settled CHECK ((state = 'sending') = (outcome IS NULL)),
    CONSTRAINT order_mail_log_sent_outcomes CHECK (state <> 'sent' OR outcome IN ('accepted', 'unknown')),
    CONSTRAINT order_mail_log_failed_outcomes CHECK (state <> 'failed' OR outcome IN ('rejected', 'not_sent', 'unknown')),
    -- An unknown outcome is only ever settled by a named policy.
    CONSTRAINT order_mail_log_unknown_has_policy CHECK (outcome IS DISTINCT FROM 'unknown' OR unknown_policy IS NOT NULL),
    -- Accepted or unknown means the request left this process.
    CONSTRAINT order_mail_log_dispatched_before_answer CHECK (outcome NOT IN ('accepted', 'unknown') OR dispatched_at IS NOT NULL)
);

CREATE INDEX order_mail_log_state_idx ON order_mail_log (state, updated_at);

-- The audit trail: one row per finished attempt, written in the same statement that settles it. Never updated.
CREATE TABLE order_mail_attempts (
    id                   BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id             BIGINT      NOT NULL REFERENCES orders (id),
    attempt              INT         NOT NULL,
    claim_token          TEXT        NOT NULL,
    claimed_at           TIMESTAMPTZ NOT NULL,
    dispatched_at        TIMESTAMPTZ,
    finished_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    state                TEXT        NOT NULL CHECK (state IN ('sent', 'failed')),
    outcome              TEXT        NOT NULL CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown')),
    unknown_policy       TEXT        CHECK (unknown_policy IN ('assume-sent', 'assume-failed')),
    provider_message_id  TEXT,
    http_status          INT,
    error                TEXT,
    -- The process that recorded the outcome (Temporal worker identity, pid@host).
    recorded_by          TEXT        NOT NULL,
    UNIQUE (order_id, attempt)
);
