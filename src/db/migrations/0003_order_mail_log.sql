-- v1.0 baseline. The source of truth for "was this order's confirmation mail sent" (docs: the row's state
-- machine). One row per order; it outlives Temporal's history. Every change to it is one statement in
-- src/db/orderMailClaim.ts (the claim), src/activities/dispatchFence.ts (the fence), src/db/orderMailRecord.ts
-- (the record) or src/db/operatorActs.ts (an operator's resolve), each fenced by its WHERE clause.
CREATE TABLE order_mail_log (
    order_id             BIGINT      PRIMARY KEY REFERENCES orders (id),
    state                TEXT        NOT NULL CHECK (state IN ('sending', 'sent', 'failed')),
    -- How many times the mail was claimed; the dispatch fence and the record are keyed on (claim_token, attempts).
    attempts             INT         NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    -- Who holds (or last held) the claim: '<namespace>/<workflow id>/<run id>' of the claiming run, or
    -- 'operator:<uuid>' once an operator resolved the row.
    claim_token          TEXT        NOT NULL,
    -- When the holding run issued its claim, on the workflow's clock: the server's time of the workflow task
    -- that scheduled the claim, recorded in history. Never a worker's clock. A run closed by a reset or a
    -- terminate issues nothing afterwards, so a later run's claims are later: a stale claim from a closed run
    -- is recognisably older and never takes the row from the open run. Equal times order nothing.
    claim_issued_at      TIMESTAMPTZ NOT NULL,
    claimed_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Deliberate re-sends by an operator (resolve --as failed). Part of the provider's idempotency key, so a
    -- re-send is a new request to the provider, while every automatic attempt reuses the key.
    resend_count         INT         NOT NULL DEFAULT 0 CHECK (resend_count >= 0),
    -- NULL until the attempt is about to make its request. A 'sending' row with NULL here is known never to
    -- have reached the provider. On a settled row: when the request whose outcome the row reports left.
    dispatched_at        TIMESTAMPTZ,
    -- 'resolved': settled by an operator's word (npm run ops -- resolve), in either final state.
    outcome              TEXT        CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown', 'resolved')),
    -- How an unknown outcome was settled: by a policy, or left for a retry under the idempotency key.
    unknown_policy       TEXT        CHECK (unknown_policy IN ('assume-sent', 'assume-failed', 'idempotent-retry')),
    provider_message_id  TEXT,
    http_status          INT,
    last_error           TEXT,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),

    -- A claim in progress has no outcome; a settled row always has one.
    CONSTRAINT order_mail_log_outcome_iff_settled CHECK ((state = 'sending') = (outcome IS NULL)),
    CONSTRAINT order_mail_log_sent_outcomes CHECK (state <> 'sent' OR outcome IN ('accepted', 'unknown', 'resolved')),
    CONSTRAINT order_mail_log_failed_outcomes CHECK (state <> 'failed' OR outcome IN ('rejected', 'not_sent', 'unknown', 'resolved')),
    -- An unknown outcome is always settled by something named.
    CONSTRAINT order_mail_log_unknown_has_policy CHECK (outcome IS DISTINCT FROM 'unknown' OR unknown_policy IS NOT NULL),
    -- A retry under the key leaves the row for the next attempt: failed, never sent.
    CONSTRAINT order_mail_log_idempotent_retry_is_failed CHECK (unknown_policy IS DISTINCT FROM 'idempotent-retry' OR state = 'failed'),
    -- Accepted or unknown means a request left this process.
    CONSTRAINT order_mail_log_dispatched_before_answer CHECK (outcome NOT IN ('accepted', 'unknown') OR dispatched_at IS NOT NULL)
);

CREATE INDEX order_mail_log_state_idx ON order_mail_log (state, updated_at);
