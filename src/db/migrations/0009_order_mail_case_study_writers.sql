-- Adoption of the case study's own order_mail_log, and its old workers beside ours (docs/adoption.md).
--
-- The old system claims with `INSERT … (order_id, 'sending', 1) ON CONFLICT DO NOTHING` or
-- `UPDATE … SET state='sending', attempts=attempts+1 … WHERE state='failed'`, and records with
-- `UPDATE … SET state='sent'` or `SET state='failed'`. It knows no claim token, no dispatch fence and no outcome.
-- This service's fences are all keyed on the claim token, so a writer that moves a row without changing the
-- token could make this service take that row for its own and send a second mail (an old claim of a failed
-- row this service holds, then our run's next claim finds 'sending' under its own token). Hence:
--
-- * A session is this service's when it carries order_mail.writer = 'order-confirmation-mail' (every
--   connection of src/db/pool.ts does). Every other write is an OUTSIDE writer's, and the trigger below
--   decides what it may do, from the row alone:
--   - its INSERT claims a new row under a claim token of its own ('legacy:<uuid>'), issued at the epoch
--     (before any run of ours, so none of them is ever ordered after it) and counted as DISPATCHED at once:
--     it has no fence, so from its claim on it may have sent, and such a row is never "known not dispatched";
--   - its UPDATE to 'sending' claims only a failed row that an outside writer last claimed (or adoption brought
--     in); on a row this service claimed it changes nothing and matches no row, exactly as the case study's
--     own WHERE does on a row it must not touch;
--   - its UPDATE to 'sent' or 'failed' settles only a row an outside writer holds, with outcome 'legacy'
--     (the old system does not say whether the API accepted or timed out; 'failed' follows a 4xx) and the
--     attempt's audit row; on any other row it changes nothing, and what it said is kept as that outside
--     attempt's late answer.
--   So whatever an outside writer does, a row this service holds stays exactly as its fences expect.
-- * A row left 'sending' by an outside writer is an attempt of unknown outcome: this service's claim reports
--   it as held elsewhere and never takes it over; the reconciliation sweep settles it by the policy once it
--   has been quiet for the sweep's grace period (src/activities/reconcileActivities.ts).
--
-- The copy of an adopted table's rows comes first, before the trigger exists: it is this migration's own
-- write, and says for each row what the old system's state meant.

ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_outcome_check,
  ADD CONSTRAINT order_mail_log_outcome_check
    CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown', 'resolved', 'legacy'));
ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_sent_outcomes,
  ADD CONSTRAINT order_mail_log_sent_outcomes
    CHECK (state <> 'sent' OR outcome IN ('accepted', 'unknown', 'resolved', 'legacy'));
ALTER TABLE order_mail_log DROP CONSTRAINT order_mail_log_failed_outcomes,
  ADD CONSTRAINT order_mail_log_failed_outcomes
    CHECK (state <> 'failed' OR outcome IN ('rejected', 'not_sent', 'unknown', 'resolved', 'legacy'));
-- An outside writer's claim has no fence: from its claim on it counts as dispatched.
ALTER TABLE order_mail_log ADD CONSTRAINT order_mail_log_outside_claims_dispatched
  CHECK (claim_token NOT LIKE 'legacy:%' OR state <> 'sending' OR dispatched_at IS NOT NULL);
ALTER TABLE order_mail_attempts DROP CONSTRAINT order_mail_attempts_outcome_check,
  ADD CONSTRAINT order_mail_attempts_outcome_check
    CHECK (outcome IN ('accepted', 'rejected', 'not_sent', 'unknown', 'legacy'));

-- Adoption: migrate --adopt renamed the case study's table to order_mail_log_case_study just before 0003
-- created this one, in the same transaction as this copy (src/db/migrate.ts). Every row comes over, under the
-- claim token 'legacy:adopted' issued at the epoch; the original stays as it was.
DO $adopt$
BEGIN
  IF to_regclass('order_mail_log_case_study') IS NULL THEN
    RETURN;
  END IF;
  INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, dispatched_at,
                              outcome, last_error, created_at, updated_at)
  SELECT old.order_id, old.state, greatest(old.attempts, 1), 'legacy:adopted', 'epoch', old.updated_at,
         -- A request was (or, while 'sending', may have been) made: none of these is known not dispatched.
         old.updated_at,
         CASE WHEN old.state = 'sending' THEN NULL ELSE 'legacy' END,
         CASE old.state
           WHEN 'sent' THEN 'adopted: sent by the old system (the API accepted it, or it timed out and the old '
                            'system counted it as sent); final'
           WHEN 'failed' THEN 'adopted: failed in the old system (the API answered 4xx); claimable'
           ELSE 'adopted: claimed by the old system, which recorded no outcome (no claim token, no dispatch '
                'fence): an attempt of unknown outcome, settled by the policy'
         END || CASE WHEN old.attempts < 1 THEN format(' (its attempts column said %s)', old.attempts) ELSE '' END,
         old.updated_at, old.updated_at
    FROM order_mail_log_case_study AS old;
  -- The audit row of each settled attempt the old system made; a 'sending' one gets its row when settled.
  INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                   finished_at, state, outcome, error, recorded_by)
  SELECT order_id, attempts, claim_token, 0, claimed_at, dispatched_at, updated_at, state, outcome, last_error,
         'adoption (migration 0009)'
    FROM order_mail_log
   WHERE claim_token = 'legacy:adopted' AND state <> 'sending';
END
$adopt$;

-- The outside writer's view of the row. SECURITY DEFINER: the old workers' role may write order_mail_log and
-- nothing else, and this also writes the audit trail. session_user names who really wrote.
CREATE FUNCTION order_mail_log_outside_writer() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  writer TEXT := format('outside writer %s (%s)', session_user,
                        coalesce(nullif(current_setting('application_name', true), ''), 'no application_name'));
  held_outside BOOLEAN;
  settled_state TEXT;
  late_attempt INT;
BEGIN
  IF current_setting('order_mail.writer', true) IS NOT DISTINCT FROM 'order-confirmation-mail' THEN
    RETURN NEW; -- This service's own statement: its WHERE clause is its fence.
  END IF;

  IF TG_OP = 'INSERT' THEN
    -- The case study's claim of an order without a row (ON CONFLICT DO NOTHING skips it when there is one).
    NEW.state := 'sending';
    NEW.attempts := greatest(coalesce(NEW.attempts, 1), 1);
    NEW.claim_token := 'legacy:' || gen_random_uuid();
    NEW.claim_issued_at := 'epoch';
    NEW.claimed_at := now();
    NEW.resend_count := 0;
    NEW.dispatched_at := now();
    NEW.outcome := NULL;
    NEW.unknown_policy := NULL;
    NEW.provider_message_id := NULL;
    NEW.http_status := NULL;
    NEW.last_error := format('claimed by %s, which has no dispatch fence: counted as dispatched', writer);
    NEW.created_at := now();
    NEW.updated_at := now();
    RETURN NEW;
  END IF;

  held_outside := OLD.state = 'sending' AND OLD.claim_token LIKE 'legacy:%';

  IF NEW.state = 'sending' THEN
    -- The case study's reclaim. Only a failed row that an outside writer last claimed; on any other row it
    -- matches nothing (the row is skipped, the statement reports 0 rows), as its WHERE state='failed' would.
    IF OLD.state <> 'failed' OR OLD.claim_token NOT LIKE 'legacy:%' THEN
      RETURN NULL;
    END IF;
    NEW.attempts := greatest(NEW.attempts, OLD.attempts + 1);
    NEW.claim_token := 'legacy:' || gen_random_uuid();
    NEW.claim_issued_at := 'epoch';
    NEW.claimed_at := now();
    NEW.resend_count := OLD.resend_count;
    NEW.dispatched_at := now();
    NEW.outcome := NULL;
    NEW.unknown_policy := NULL;
    NEW.provider_message_id := NULL;
    NEW.http_status := NULL;
    NEW.last_error := format('claimed again by %s, which has no dispatch fence: counted as dispatched', writer);
    NEW.created_at := OLD.created_at;
    NEW.updated_at := now();
    RETURN NEW;
  END IF;

  -- The case study's record: state 'sent' (the API accepted it, or it timed out) or 'failed' (a 4xx).
  settled_state := NEW.state;
  IF held_outside THEN
    NEW := OLD;
    NEW.state := settled_state;
    NEW.outcome := 'legacy';
    NEW.unknown_policy := NULL;
    NEW.last_error := format('recorded %s by %s (%s)', settled_state, writer,
                             CASE settled_state WHEN 'sent' THEN 'the API accepted it, or it timed out'
                                                ELSE 'the API answered 4xx' END);
    NEW.updated_at := now();
    INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                     state, outcome, error, recorded_by)
    VALUES (NEW.order_id, NEW.attempts, NEW.claim_token, NEW.resend_count, NEW.claimed_at, NEW.dispatched_at,
            settled_state, 'legacy', NEW.last_error, writer)
    ON CONFLICT (order_id, attempt) DO NOTHING;
    RETURN NEW;
  END IF;
  -- Not an outside writer's attempt any more (the sweep settled it, and maybe this service claimed the row
  -- since), or never one: the row stays as it is. What the record said is kept once, as the late answer of the
  -- latest outside attempt, as this service keeps a provider's answer that comes after its attempt was settled.
  SELECT audit.attempt INTO late_attempt FROM order_mail_attempts AS audit
   WHERE audit.order_id = OLD.order_id AND audit.claim_token LIKE 'legacy:%'
   ORDER BY audit.attempt DESC LIMIT 1;
  IF late_attempt IS NOT NULL THEN
    INSERT INTO order_mail_late_answers (order_id, attempt, outcome, note, recorded_by)
    VALUES (OLD.order_id, late_attempt, 'legacy',
            format('the old system set state=%s after this attempt was settled; the row was left as it was',
                   settled_state),
            writer)
    ON CONFLICT (order_id, attempt) DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER order_mail_log_outside_writer BEFORE INSERT OR UPDATE ON order_mail_log
  FOR EACH ROW EXECUTE FUNCTION order_mail_log_outside_writer();
