-- The case study's mail log, as its redesign creates it (the shop's table before it adopts this service).
-- Kept word for word: the tests create it with exactly this, beside an `orders` table, to run the old worker
-- (case_study_worker.py) and to adopt the table. Note attempts DEFAULT 0 and no created_at, claim token or
-- outcome: the old system records none of them.
CREATE TABLE order_mail_log (
    order_id    BIGINT PRIMARY KEY REFERENCES orders(id),
    state       TEXT NOT NULL CHECK (state IN ('sending', 'sent', 'failed')),
    attempts    INT  NOT NULL DEFAULT 0,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
