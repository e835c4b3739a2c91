-- A provider's answer that reached its record after someone else had settled the attempt (an operator's
-- resolve, a newer run's claim, the sweep), or an old system's record that came after its attempt was settled
-- (0009). Until now such an answer was written into the attempt's audit row (order_mail_attempts.late_*), the
-- one UPDATE the audit trail allowed. It gets an append-only table of its own, so every audit table refuses
-- UPDATE outright (0010): one row per attempt, the first late answer wins, never updated.
CREATE TABLE order_mail_late_answers (
    order_id             BIGINT      NOT NULL,
    attempt              INT         NOT NULL,
    outcome              TEXT        NOT NULL CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'legacy')),
    provider_message_id  TEXT,
    http_status          INT,
    -- What else the answer said (for an old system's record: the state its statement set).
    note                 TEXT,
    recorded_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    recorded_by          TEXT        NOT NULL,
    PRIMARY KEY (order_id, attempt),
    -- A late answer belongs to an attempt of the audit trail.
    FOREIGN KEY (order_id, attempt) REFERENCES order_mail_attempts (order_id, attempt)
);

-- The late answers kept so far move over; the old columns stay (a migration never drops what a running
-- worker of the previous release may still read) but nothing writes them any more.
INSERT INTO order_mail_late_answers (order_id, attempt, outcome, provider_message_id, http_status, recorded_at,
                                     recorded_by)
SELECT order_id, attempt, late_outcome, late_provider_message_id, late_http_status, late_recorded_at,
       coalesce(late_recorded_by, 'unknown')
  FROM order_mail_attempts
 WHERE late_outcome IS NOT NULL;

COMMENT ON COLUMN order_mail_attempts.late_outcome IS 'Unused since migration 0008: see order_mail_late_answers.';
