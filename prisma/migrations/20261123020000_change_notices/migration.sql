-- Change notices: every statement that changes a table whose rows API processes cache
-- (credentials, rights, organisations, the catalogue) announces, from its own transaction, which
-- organisations it touched: pg_notify('service_changes', '<organisationId> <table>'). NOTIFY is
-- delivered at commit only (and not at all on rollback), and PostgreSQL folds identical notices of
-- one transaction into one. Statement-level triggers with transition tables send one notice per
-- organisation per statement, however many rows it changed.

CREATE FUNCTION "notify_changes_new"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_changes', o || ' ' || TG_TABLE_NAME)
    FROM (SELECT DISTINCT ("row"->>TG_ARGV[0]) AS o FROM (SELECT to_jsonb(n) AS "row" FROM new_rows n) r) s WHERE o IS NOT NULL;
  RETURN NULL;
END $$;

CREATE FUNCTION "notify_changes_old"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_changes', o || ' ' || TG_TABLE_NAME)
    FROM (SELECT DISTINCT ("row"->>TG_ARGV[0]) AS o FROM (SELECT to_jsonb(d) AS "row" FROM old_rows d) r) s WHERE o IS NOT NULL;
  RETURN NULL;
END $$;

DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES
    ('organisations', 'id'),
    ('accounts', 'organisationId'),
    ('users', 'organisationId'),
    ('roles', 'organisationId'),
    ('role_assignments', 'organisationId'),
    ('api_keys', 'organisationId'),
    ('embed_sessions', 'organisationId'),
    ('sales_channels', 'organisationId'),
    ('sales_channel_events', 'organisationId'),
    ('channel_keys', 'organisationId'),
    ('customers', 'organisationId'),
    ('venues', 'organisationId'),
    ('events', 'organisationId'),
    ('event_occurrences', 'organisationId'),
    ('ticket_types', 'organisationId'),
    ('inventories', 'organisationId')
  ) AS v(tbl, col) LOOP
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_changes_new(%L)', t.tbl || '_notify_insert', t.tbl, t.col);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_changes_new(%L)', t.tbl || '_notify_update', t.tbl, t.col);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_changes_old(%L)', t.tbl || '_notify_delete', t.tbl, t.col);
  END LOOP;
END $$;
