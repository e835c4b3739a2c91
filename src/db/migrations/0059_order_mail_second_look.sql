-- The second look (docs/design.md §4 rule 5, "The second look"): an attempt that UNKNOWN_OUTCOME_POLICY=
-- assume-sent settled as sent while verification was inconclusive is asked about once more by the sweep, while
-- the provider's lookup still holds it. What that look found is kept on the row, so the row is looked at once:
--   second_look          'reopened': the lookup proved it not sent, and the row was reopened (failed/not_sent)
--                        for the order's mail to be sent; 'found': the provider has it, the row stays sent.
--                        NULL: never looked at again (pending while the row is a candidate, else never).
--   second_looked_at     when, on Postgres's clock.
--   second_look_attempt  the attempt the look was about: a reopened row claimed since has more attempts.
-- The claim leaves these columns alone, so a later unknown of the same row gets no third look. Written by the
-- worker's role (table-level UPDATE since 0010); 0050's trigger counts it as this service.
ALTER TABLE order_mail_log
    ADD COLUMN second_look TEXT CHECK (second_look IN ('reopened', 'found')),
    ADD COLUMN second_looked_at TIMESTAMPTZ,
    ADD COLUMN second_look_attempt INT,
    ADD CONSTRAINT order_mail_log_second_look_whole CHECK (
        (second_look IS NULL) = (second_looked_at IS NULL)
        AND (second_look IS NULL) = (second_look_attempt IS NULL));

-- The sweep's candidates, oldest dispatch first (its keyset): few rows, so a partial index keeps the page a
-- short range scan whatever the size of the log.
CREATE INDEX order_mail_log_second_look_candidates ON order_mail_log (dispatched_at, order_id)
    WHERE state = 'sent' AND outcome = 'unknown' AND unknown_policy = 'assume-sent'
      AND verification = 'inconclusive' AND second_look IS NULL;
