-- Operators' acts on order mails (DESIGN.md §4 rule 5): `npm run ops -- retry|resolve`. Every act leaves a row
-- saying who, when, why and what changed. Never updated.
CREATE TABLE order_mail_operator_acts (
    id           BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id     BIGINT      NOT NULL REFERENCES orders (id),
    act          TEXT        NOT NULL CHECK (act IN ('retry', 'resolve')),
    -- Who did it: the operator's name as the CLI was told it (--operator, $OPERATOR, else the OS user).
    operator     TEXT        NOT NULL CHECK (operator <> ''),
    acted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    reason       TEXT        NOT NULL CHECK (btrim(reason) <> ''),
    -- The log row before and after the act (state, outcome, attempts, claim token, ...); NULL where there was
    -- none. For a retry, `after` is the row as the reset found it: the new run changes it afterwards.
    row_before   JSONB,
    row_after    JSONB,
    -- What else happened: for a retry, the workflow run that was reset and the new run.
    details      JSONB       NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX order_mail_operator_acts_order_idx ON order_mail_operator_acts (order_id, acted_at);

-- `resolve` settles a row by an operator's word rather than by a send: outcome 'resolved', in either final
-- state. The act that did it is the row's latest 'resolve' in order_mail_operator_acts.
ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_outcome_check;
ALTER TABLE order_mail_log ADD CONSTRAINT order_mail_log_outcome_check
    CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown', 'resolved'));

ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_sent_outcomes;
ALTER TABLE order_mail_log ADD CONSTRAINT order_mail_log_sent_outcomes
    CHECK (state <> 'sent' OR outcome IN ('accepted', 'unknown', 'resolved'));

ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_failed_outcomes;
ALTER TABLE order_mail_log ADD CONSTRAINT order_mail_log_failed_outcomes
    CHECK (state <> 'failed' OR outcome IN ('rejected', 'not_sent', 'unknown', 'resolved'));
