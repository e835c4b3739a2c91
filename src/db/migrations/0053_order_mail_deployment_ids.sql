-- The deployment id (MAIL_DEPLOYMENT_ID) each Temporal namespace's workers send under: it is in every send key,
-- so two ids in one namespace would ask the provider about one attempt under another's key. The first worker
-- of a namespace records it; a worker with another id refuses to start (src/db/deploymentIds.ts). Changing it
-- is a deliberate operator's step (docs/operating.md), not a worker's.
CREATE TABLE order_mail_deployment_ids (
    namespace TEXT PRIMARY KEY,
    deployment_id TEXT NOT NULL CHECK (deployment_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Workers record and read; nothing updates or deletes but the migration role (the owner), by hand.
GRANT SELECT, INSERT ON order_mail_deployment_ids TO order_mail_worker;
