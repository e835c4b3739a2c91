-- Where the attempt in flight went, recorded by the dispatch fence with dispatched_at (src/activities/
-- dispatchFence.ts), so that whoever asks the provider about it later (the workflow, the run that takes over a
-- closed run's attempt, the sweep) asks that place, not whatever the asking worker is configured for by then
-- (src/evidence/destination.ts). Never the secret: the credential is a one-way fingerprint of the API key.
-- NULL on rows dispatched before this migration: a lookup about such an attempt is inconclusive.
ALTER TABLE order_mail_log
    -- generic, postmark, mailgun, sendgrid, resend or smtp
    ADD COLUMN dispatch_provider TEXT,
    -- scheme://host:port of the API (a Mailgun region is its own origin)
    ADD COLUMN dispatch_origin TEXT,
    -- the Mailgun sending domain or the Postmark message stream
    ADD COLUMN dispatch_scope TEXT,
    ADD COLUMN dispatch_credential_fingerprint TEXT
        CHECK (dispatch_credential_fingerprint ~ '^sha256:[0-9a-f]{16}$'),
    -- the send key the request carried (src/mail/idempotencyKey.ts), as it was then
    ADD COLUMN dispatch_send_key TEXT,
    -- the send activity's timeout of the execution that dispatched: its request cannot have outlived it
    ADD COLUMN dispatch_send_timeout_ms INTEGER CHECK (dispatch_send_timeout_ms > 0);
