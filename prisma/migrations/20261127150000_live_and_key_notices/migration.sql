-- A key's last use is written as it is used (at most every 10 s per key and process): no cached
-- credential or right depends on it, so an update of nothing else announces nothing. Otherwise every
-- busy key would tell every API process, every few seconds, that its organisation's credentials
-- changed: their auth caches would read the organisation's keys again, and every live subscription
-- of it would read its credential again (src/live/live.ts). Every other change of a key still
-- announces itself (test/platform/change-notices.test.ts).

CREATE FUNCTION "notify_key_changes"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_changes', o || ' ' || TG_TABLE_NAME)
    FROM (SELECT DISTINCT n."organisationId" AS o
            FROM new_rows n JOIN old_rows d ON d."id" = n."id"
           WHERE to_jsonb(n) - 'lastUsedAt' IS DISTINCT FROM to_jsonb(d) - 'lastUsedAt') s;
  RETURN NULL;
END $$;

DROP TRIGGER "api_keys_notify_update" ON "api_keys";
CREATE TRIGGER "api_keys_notify_update" AFTER UPDATE ON "api_keys"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION notify_key_changes();

DROP TRIGGER "channel_keys_notify_update" ON "channel_keys";
CREATE TRIGGER "channel_keys_notify_update" AFTER UPDATE ON "channel_keys"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION notify_key_changes();

-- A live event carries the time its change committed (the deferred trigger runs as the transaction
-- ends, moments before its commit): now() would be when the transaction began, which for a
-- checkout is the time it waited on payments and inventory too. Subscribers see it as
-- `committedAt`; the notice gains it as a last field (epoch milliseconds):
--   e <id> <organisationId> <topic> <kind> <subjectId> <accountId> [<eventId>,...] <committedAtMs>
CREATE OR REPLACE FUNCTION "live_event"(org TEXT, topic TEXT, kind TEXT, subject TEXT, account TEXT, event_ids TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  new_id BIGINT;
  at TIMESTAMPTZ(3) := clock_timestamp();
BEGIN
  INSERT INTO live_events ("organisationId", topic, kind, "subjectId", "accountId", "eventIds", "createdAt")
    VALUES (org, topic, kind, subject, account, event_ids, at) RETURNING id INTO new_id;
  PERFORM pg_notify('service_live', concat_ws(' ', 'e', new_id, org, topic, kind, subject, coalesce(account, '-'),
    array_to_string(event_ids, ','), (extract(epoch FROM at) * 1000)::bigint));
END $$;
