-- An SES event counts for an attempt only when it comes from where the attempt went: the same configuration
-- set and the same sending account (src/evidence/evidenceRules.ts). Anyone who may publish to the SNS topic
-- (another app, a staging deployment, another account's SES) can otherwise make genuinely signed events that
-- carry our tags.
--   order_mail_log.dispatch_account: the AWS account the request was sent from (SES_ACCOUNT_ID), recorded by
--     the dispatch fence with the rest of the destination (migration 0015). NULL for other providers and for
--     SES attempts dispatched before this migration: those are judged by the configured account.
--   order_mail_provider_events.sending_account, configuration_set: what the SES event names (its
--     mail.sendingAccountId and its ses:configuration-set tag). NULL for other providers, and for SES events
--     stored before this migration, which therefore count for nothing.
ALTER TABLE order_mail_log
    ADD COLUMN dispatch_account TEXT CHECK (dispatch_account ~ '^[0-9]{12}$');

ALTER TABLE order_mail_provider_events
    ADD COLUMN sending_account TEXT CHECK (sending_account ~ '^[0-9]{12}$'),
    ADD COLUMN configuration_set TEXT CHECK (configuration_set ~ '^[A-Za-z0-9_-]{1,64}$');

-- Every SES event stored from now on says where it came from; the rows before it are left as they are.
ALTER TABLE order_mail_provider_events
    ADD CONSTRAINT order_mail_provider_events_ses_source
        CHECK (provider <> 'ses' OR (sending_account IS NOT NULL AND configuration_set IS NOT NULL)) NOT VALID;
