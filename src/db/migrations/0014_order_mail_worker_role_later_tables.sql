-- The worker role (0010) on the tables made before it by number but landed beside it: the provider events and
-- webhook deliveries (0006), and the sweep's progress mark (0013), whose upsert needs UPDATE, which 0010's
-- default privileges do not give. Without these a least-privilege worker could not read the webhook evidence
-- (every unknown outcome of a SendGrid or Mailgun send would fall to the policy), the webhook receiver could
-- not store an event, and a sweep could not move its mark (test/db/leastPrivilege.test.ts).
GRANT SELECT, INSERT ON order_mail_provider_events TO order_mail_worker;
-- Deliveries are the replay guard: the receiver forgets tokens older than its signature window.
GRANT SELECT, INSERT, DELETE ON order_mail_webhook_deliveries TO order_mail_worker;
GRANT SELECT, INSERT, UPDATE ON order_mail_reconcile_progress TO order_mail_worker;

-- A provider event is what the provider said: append-only like the other audit tables (its owner may still
-- delete, which is how npm run prune retires old events).
CREATE TRIGGER order_mail_provider_events_append_only BEFORE UPDATE OR DELETE ON order_mail_provider_events
  FOR EACH ROW EXECUTE FUNCTION order_mail_refuse_audit_change();
