-- When Temporal scheduled the claim that holds this row (the claim activity's first schedule time, from the
-- server). Runs of one workflow id follow each other in time: a reset or terminate closes the old run before
-- the new one schedules its claim. So a late claim from a closed run (an activity attempt that was already
-- executing when the run was reset) is recognisably older than the open run's claim, and must never take a
-- row over from it. NULL for rows claimed before this column existed: they count as older than any claim.
ALTER TABLE order_mail_log ADD COLUMN claim_scheduled_at TIMESTAMPTZ;
