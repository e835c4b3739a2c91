-- What the mail providers told us afterwards, by signed event webhook (src/webhooks/): one row per event,
-- stored once however often the provider delivers it. An `accepted` (or any later) event is evidence that a
-- send reached the provider, which the workflow's verification reads; a bounce or a drop says why a customer
-- never got the mail (npm run ops -- status). Written only by src/webhooks/providerEvents.ts. Never updated.
CREATE TABLE order_mail_provider_events (
    id                   BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider             TEXT        NOT NULL CHECK (provider IN ('sendgrid', 'mailgun')),
    -- The provider's own id of the event (SendGrid sg_event_id, Mailgun event-data id): what makes a
    -- redelivery a no-op.
    provider_event_id    TEXT        NOT NULL,
    -- From the event's custom arguments / user variables. Not a foreign key on purpose: a webhook must never
    -- fail (and be retried for a day) because an order was archived, and a stray id harms nothing here.
    order_id             BIGINT      NOT NULL,
    -- The send key the request carried (src/verification/sendKey.ts); NULL for mail sent before it existed.
    send_key             TEXT,
    provider_message_id  TEXT,
    -- SendGrid `processed` and Mailgun `accepted` are both 'accepted': the provider took the request.
    event_type           TEXT        NOT NULL
                         CHECK (event_type IN ('accepted', 'delivered', 'bounced', 'dropped', 'complained')),
    -- When the provider says the event happened.
    occurred_at          TIMESTAMPTZ NOT NULL,
    received_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Why a bounce or a drop happened, as the provider put it, with addresses taken out.
    reason               TEXT,
    UNIQUE (provider, provider_event_id)
);

CREATE INDEX order_mail_provider_events_order_idx ON order_mail_provider_events (order_id, occurred_at);

-- Signed webhook deliveries already taken, so a captured request replayed within the accepted clock window is
-- refused (Mailgun: its token; SendGrid: its signature). Rows older than that window are pruned: a request
-- that old is refused for its timestamp anyway.
CREATE TABLE order_mail_webhook_deliveries (
    provider     TEXT        NOT NULL CHECK (provider IN ('sendgrid', 'mailgun')),
    token        TEXT        NOT NULL,
    signed_at    TIMESTAMPTZ NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, token)
);

CREATE INDEX order_mail_webhook_deliveries_signed_idx ON order_mail_webhook_deliveries (signed_at);
