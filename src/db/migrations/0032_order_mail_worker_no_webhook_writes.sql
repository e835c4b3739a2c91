-- The workers only READ webhook evidence (the verify activity, src/webhooks/providerEvents.ts listSendEvents;
-- ops status). Storing events and keeping or forgetting replay tokens is the webhook receiver's alone, under its
-- own role since 0025 (npm run webhooks refuses the workers' login). 0014 had given the worker role what the
-- receiver needed while it ran as a worker: INSERT on the events and SELECT, INSERT, DELETE on the tokens.
-- Nothing in a worker or the ops CLI uses them, and npm run prune (the owner's) never touches the tokens, so a
-- worker taken over can neither plant a provider event nor forget a token to reopen a replay.
REVOKE INSERT ON order_mail_provider_events FROM order_mail_worker;
REVOKE ALL ON order_mail_webhook_deliveries FROM order_mail_worker;
