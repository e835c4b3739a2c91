-- Failover (issue 25): the provider each attempt goes to, chosen by the claim (src/db/orderMailClaim.ts with
-- src/mail/providerChoice.ts) and written by the same statement that hands the row to the attempt, so parallel
-- workers and later askers agree on it. The send sends through it, the dispatch fence checks it, and everything
-- that asks about the attempt (verification, the sweep, a takeover) asks it. Each audit row keeps it, so the
-- next claim can tell whether an earlier attempt under the same key may have reached a provider: after an
-- unknown that was not verified, the mail stays with that provider.
-- NULL on rows and attempts from before this migration, and for a worker with no named provider (a test's fake).
-- provider_choice says why (src/shared/providerChoice.ts ChoiceReason): first, pinned, after-not-sent,
-- skipped-unhealthy, skipped-by-operator, all-unavailable or bound.
ALTER TABLE order_mail_log ADD COLUMN provider TEXT, ADD COLUMN provider_choice TEXT;
ALTER TABLE order_mail_attempts ADD COLUMN provider TEXT, ADD COLUMN provider_choice TEXT;
