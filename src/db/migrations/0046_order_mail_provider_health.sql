-- Failover (issue 25): each provider's health, shared by every worker. The send counts its failures (not sent:
-- refused connections, 5xx, 429) and its successes; a provider whose failures in a row reach the threshold is
-- skipped by new attempts until skip_until (src/db/providerHealth.ts). An operator may pin one (every new attempt
-- goes to it, while the failover rule allows) or skip one (npm run ops -- provider). Health decides only where a
-- NEW attempt goes; whether an attempt may leave its earlier provider is the claim's rule, not this table's.
CREATE TABLE order_mail_provider_health (
    provider TEXT PRIMARY KEY CHECK (provider ~ '^[a-z]+$'),
    consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    last_failure_at TIMESTAMPTZ,
    last_failure TEXT,
    last_success_at TIMESTAMPTZ,
    skip_until TIMESTAMPTZ,
    operator_mode TEXT NOT NULL DEFAULT 'auto' CHECK (operator_mode IN ('auto', 'pinned', 'skipped')),
    operator_set_by TEXT,
    operator_set_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Workers (and the ops CLI, which runs under a worker login) count and set; nothing deletes. The default
-- privileges of 0010 give SELECT and INSERT; the counters are upserts, which need UPDATE. The webhook
-- receiver's role gets nothing.
GRANT SELECT, INSERT, UPDATE ON order_mail_provider_health TO order_mail_worker;
