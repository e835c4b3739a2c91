-- v1.0 baseline. Operators' acts on order mails (npm run ops -- retry|resolve): who, when, why and what changed.
-- Never updated.
CREATE TABLE order_mail_operator_acts (
    id           BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id     BIGINT      NOT NULL REFERENCES orders (id),
    act          TEXT        NOT NULL CHECK (act IN ('retry', 'resolve')),
    -- The operator's name as the CLI was told it (--operator, $OPERATOR, else the OS user).
    operator     TEXT        NOT NULL CHECK (operator <> ''),
    acted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    reason       TEXT        NOT NULL CHECK (btrim(reason) <> ''),
    -- The log row before and after the act; NULL where there was none. For a retry, `after` is not known (the
    -- new run changes the row afterwards).
    row_before   JSONB,
    row_after    JSONB,
    -- What else happened: for a retry, the workflow run that was reset and the new run.
    details      JSONB       NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX order_mail_operator_acts_order_idx ON order_mail_operator_acts (order_id, acted_at);
