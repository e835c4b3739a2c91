-- Amazon SES (issue 25): its events reach us through SNS (src/webhooks/snsWebhook.ts) and are stored like the
-- other providers' webhook events, with provider 'ses'. The SNS MessageId of each notification is both the
-- event's id (SES events carry none of their own) and the delivery's token, so a notification replayed within
-- the clock window is refused. Only the two provider checks change.
ALTER TABLE order_mail_provider_events
    DROP CONSTRAINT order_mail_provider_events_provider_check,
    ADD CONSTRAINT order_mail_provider_events_provider_check
        CHECK (provider IN ('sendgrid', 'mailgun', 'ses'));

ALTER TABLE order_mail_webhook_deliveries
    DROP CONSTRAINT order_mail_webhook_deliveries_provider_check,
    ADD CONSTRAINT order_mail_webhook_deliveries_provider_check
        CHECK (provider IN ('sendgrid', 'mailgun', 'ses'));
