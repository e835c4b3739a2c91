-- Verifying unknown outcomes with the provider (src/verification/, the workflow's verify step).
--
-- How an unknown outcome was verified: decided by the provider's lookup or by a webhook event, or tried in
-- vain ('inconclusive', and the policy decided). NULL: not verified (no unknown, or no way to ask). On the log
-- row it describes the attempt the row reports; the claim clears it with the rest of the outcome.
ALTER TABLE order_mail_log
    ADD COLUMN verification TEXT CHECK (verification IN ('lookup', 'webhook', 'inconclusive'));
ALTER TABLE order_mail_attempts
    ADD COLUMN verification TEXT CHECK (verification IN ('lookup', 'webhook', 'inconclusive')),
    -- A lookup decides accepted or not sent, a webhook event only accepted (a missing event proves nothing);
    -- when neither could decide, the outcome stayed unknown and the policy settled it.
    ADD CONSTRAINT order_mail_attempts_verification_decides CHECK (
        verification IS NULL
        OR (verification = 'lookup' AND outcome IN ('accepted', 'not_sent'))
        OR (verification = 'webhook' AND outcome = 'accepted')
        OR (verification = 'inconclusive' AND outcome = 'unknown' AND unknown_policy IN ('assume-sent', 'assume-failed')));
