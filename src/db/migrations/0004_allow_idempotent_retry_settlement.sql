-- A third way an unknown outcome is settled, beside the two policies: with a provider that dedupes by
-- idempotency key (Resend, 24 h), the workflow retries the send under the same key while the window lasts.
-- The attempt that ended unknown is then recorded failed/unknown with unknown_policy = 'idempotent-retry',
-- and the next attempt's request carries the same key, so the provider answers it from its store instead of
-- sending a second mail. Numbered 0004 because another change may add a 0003; they do not depend on each other.
ALTER TABLE order_mail_log
    DROP CONSTRAINT order_mail_log_unknown_policy_check,
    ADD CONSTRAINT order_mail_log_unknown_policy_check
        CHECK (unknown_policy IN ('assume-sent', 'assume-failed', 'idempotent-retry')),
    -- Retrying under the key leaves the row for the next attempt: failed, never sent.
    ADD CONSTRAINT order_mail_log_idempotent_retry_is_failed
        CHECK (unknown_policy IS DISTINCT FROM 'idempotent-retry' OR state = 'failed');

ALTER TABLE order_mail_attempts
    DROP CONSTRAINT order_mail_attempts_unknown_policy_check,
    ADD CONSTRAINT order_mail_attempts_unknown_policy_check
        CHECK (unknown_policy IN ('assume-sent', 'assume-failed', 'idempotent-retry')),
    ADD CONSTRAINT order_mail_attempts_idempotent_retry_is_failed
        CHECK (unknown_policy IS DISTINCT FROM 'idempotent-retry' OR state = 'failed');
