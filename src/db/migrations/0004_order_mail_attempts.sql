-- v1.0 baseline. The audit trail: one row per finished attempt, written in the same statement that settles it.
-- Never updated, with one exception: an answer that reaches its record after someone else had settled the
-- attempt (a late answer) is kept once in the late_* columns, so no provider message id is ever dropped.
CREATE TABLE order_mail_attempts (
    id                        BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id                  BIGINT      NOT NULL REFERENCES orders (id),
    attempt                   INT         NOT NULL,
    claim_token               TEXT        NOT NULL,
    -- The row's resend_count when this attempt ran: which idempotency key its request carried.
    resend_count              INT         NOT NULL CHECK (resend_count >= 0),
    claimed_at                TIMESTAMPTZ NOT NULL,
    -- When this attempt's request left; NULL if it made none.
    dispatched_at             TIMESTAMPTZ,
    finished_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
    state                     TEXT        NOT NULL CHECK (state IN ('sent', 'failed')),
    outcome                   TEXT        NOT NULL CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown')),
    unknown_policy            TEXT        CHECK (unknown_policy IN ('assume-sent', 'assume-failed', 'idempotent-retry')),
    provider_message_id       TEXT,
    http_status               INT,
    error                     TEXT,
    -- The process that settled the attempt (worker identity pid@host, 'operator:<name>', the sweep).
    recorded_by               TEXT        NOT NULL,
    late_outcome              TEXT        CHECK (late_outcome IN ('accepted', 'rejected', 'not_sent')),
    late_provider_message_id  TEXT,
    late_http_status          INT,
    late_recorded_at          TIMESTAMPTZ,
    late_recorded_by          TEXT,
    UNIQUE (order_id, attempt),
    CONSTRAINT order_mail_attempts_idempotent_retry_is_failed CHECK (unknown_policy IS DISTINCT FROM 'idempotent-retry' OR state = 'failed'),
    CONSTRAINT order_mail_attempts_late_is_complete CHECK ((late_outcome IS NULL) = (late_recorded_at IS NULL))
);
