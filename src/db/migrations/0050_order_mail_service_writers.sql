-- Who counts as this service on order_mail_log (docs/design.md, "Who is the service"; docs/adoption.md).
--
-- 0009's trigger took a session for this service's when it carried the setting order_mail.writer, which any
-- session may set: an outside writer that set it moved a row this service held and made its next claim send
-- again. The trigger now asks who the session's login is instead: a login that is, by explicit grant
-- (pg_auth_members, directly or through groups), a member of one of the service's groups. Superuser status
-- and owning the table do not count: a DBA's hand-typed statement, or an old worker still running as the
-- table's owner, is an outside writer like any other. The setting grants nothing any more.
--
-- The groups: order_mail_worker (0010: the workers and the ops CLI), order_mail_operators (the operators'
-- logins, where that group exists) and order_mail_migration (the migration login, made here; `npm run
-- db:roles` grants it). A superuser may still switch the trigger off; this rule keeps honest mistakes and
-- forged settings out, not the cluster's administrator.

DO $role$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'order_mail_migration') THEN
    BEGIN
      CREATE ROLE order_mail_migration NOLOGIN;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'role order_mail_migration does not exist, and % may not create roles', current_user
          USING HINT = 'Create it first: CREATE ROLE order_mail_migration NOLOGIN; GRANT order_mail_migration TO <the migration login>; or run npm run db:roles (docs/production.md).';
    END;
  END IF;
END
$role$;

-- The rule, for any role: true when `who` may act as one of the service's groups (inherits its privileges or
-- may SET ROLE to it) through grants of its own: the first step is read from pg_auth_members, which superuser
-- status does not touch; the steps after it (a group in a group) from pg_has_role, counting no step through a
-- superuser. A grant that carries neither INHERIT nor SET (PostgreSQL 16 gives a non-superuser role maker
-- ADMIN alone on what it makes) does not make its holder act as the group, so it does not count.
DO $function$
DECLARE
  since16 BOOLEAN := current_setting('server_version_num')::int >= 160000;
  counts TEXT := CASE WHEN since16 THEN '(m.inherit_option OR m.set_option)' ELSE 'true' END;
  acts_as TEXT := CASE WHEN since16
                       THEN 'pg_catalog.pg_has_role(%1$s, g.oid, ''USAGE'') OR pg_catalog.pg_has_role(%1$s, g.oid, ''SET'')'
                       ELSE 'pg_catalog.pg_has_role(%1$s, g.oid, ''MEMBER'')' END;
  groups TEXT := $groups$(SELECT pg_catalog.to_regrole(name) AS oid
                   FROM pg_catalog.unnest(ARRAY['order_mail_worker', 'order_mail_operators',
                                                'order_mail_migration']::pg_catalog.text[]) AS name) AS g$groups$;
BEGIN
  EXECUTE format($sql$
    CREATE FUNCTION public.order_mail_is_service_role(who NAME) RETURNS BOOLEAN
    LANGUAGE sql STABLE AS $body$
      SELECT EXISTS (
        SELECT FROM pg_catalog.pg_auth_members AS m, %s
         WHERE m.member = pg_catalog.to_regrole(who) AND g.oid IS NOT NULL AND %s
           AND (m.roleid = g.oid
                OR (NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.oid = m.roleid) AND (%s))))
    $body$ $sql$, groups, counts, format(acts_as, 'm.roleid'));

  -- The same rule for the session, as the trigger asks it for every row, cheaply. A session whose login is no
  -- superuser and that switched to no other role (is_superuser and role are settings no session may set
  -- itself) has only its own grants, so pg_has_role (from the role cache) is the rule. Any other (a
  -- superuser, a SET ROLE) reads the catalog once per transaction: the answer is kept in this session's
  -- currval of a sequence only the owner may advance, so no session can forge it; the setting beside it only
  -- says a currval exists, and a forged one makes currval fail, not pass. Not SECURITY DEFINER (that costs
  -- per row): it runs inside the trigger, which is, and anyone else calling it has no right on the sequence.
  CREATE SEQUENCE public.order_mail_service_session MINVALUE 0;
  EXECUTE format($sql$
    CREATE FUNCTION public.order_mail_session_is_service() RETURNS BOOLEAN
    LANGUAGE plpgsql VOLATILE AS $body$
    DECLARE
      xact BIGINT;
      kept BIGINT;
      service BOOLEAN;
    BEGIN
      IF pg_catalog.current_setting('is_superuser') = 'off' AND pg_catalog.current_setting('role') = 'none' THEN
        RETURN EXISTS (SELECT FROM %s WHERE g.oid IS NOT NULL AND (%s));
      END IF;
      xact := pg_catalog.txid_current();
      IF pg_catalog.current_setting('order_mail.service_session', true) = 'kept' THEN
        kept := pg_catalog.currval('public.order_mail_service_session');
        IF kept / 2 = xact THEN
          RETURN kept %% 2 = 1;
        END IF;
      END IF;
      service := public.order_mail_is_service_role(session_user);
      PERFORM pg_catalog.setval('public.order_mail_service_session', xact * 2 + service::int);
      PERFORM pg_catalog.set_config('order_mail.service_session', 'kept', false);
      RETURN service;
    END $body$ $sql$, groups, format(acts_as, 'session_user'));
END
$function$;
REVOKE ALL ON SEQUENCE order_mail_service_session FROM PUBLIC;

-- 0009's function, word for word but for its first test: who is writing, not what the session says.
CREATE OR REPLACE FUNCTION order_mail_log_outside_writer() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  writer TEXT := format('outside writer %s (%s)', session_user,
                        coalesce(nullif(current_setting('application_name', true), ''), 'no application_name'));
  held_outside BOOLEAN;
  settled_state TEXT;
  late_attempt INT;
BEGIN
  IF order_mail_session_is_service() THEN
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

-- A migration login outside the groups still migrates, but what a later migration writes to order_mail_log
-- would be an outside writer's: say so now.
DO $check$
BEGIN
  IF NOT order_mail_is_service_role(session_user) THEN
    RAISE WARNING 'the migration login % is not a member of order_mail_migration: order_mail_log''s trigger takes its writes for an outside writer''s', session_user
      USING HINT = 'GRANT order_mail_migration TO ' || quote_ident(session_user) || '; or run npm run db:roles (docs/production.md).';
  END IF;
END
$check$;
