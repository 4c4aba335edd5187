-- An event's occurrenceCount (occurrences not cancelled) and ticketCount (ticket types not deleted)
-- are kept on the event, so that a page of events reads them with its rows instead of counting
-- each row's occurrences and ticket types. Kept by triggers, like firstStartsAt, in the
-- transaction of every change to occurrences or ticket types, whoever writes them.
ALTER TABLE "events" ADD COLUMN "occurrenceCount" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "events" ADD COLUMN "ticketCount" INTEGER NOT NULL DEFAULT 0;

UPDATE "events" e
   SET "occurrenceCount" = (SELECT count(*) FROM "event_occurrences" o
                             WHERE o."organisationId" = e."organisationId" AND o."eventId" = e.id AND o.status <> 'cancelled'),
       "ticketCount" = (SELECT count(*) FROM "ticket_types" t
                         WHERE t."organisationId" = e."organisationId" AND t."eventId" = e.id AND NOT t."isDeleted");

-- Recounts the events `event_ids`, locked first in id order (see events_first_starts_at): of two
-- transactions changing one event's occurrences or ticket types, the second to lock it counts the
-- other's rows too.
CREATE FUNCTION "events_recount"(event_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(event_ids) = 0 THEN
    RETURN;
  END IF;
  PERFORM 1 FROM events WHERE id = ANY(event_ids) ORDER BY id FOR NO KEY UPDATE;
  UPDATE events e
     SET "occurrenceCount" = c.occurrences, "ticketCount" = c.types
    FROM (SELECT x.id,
                 (SELECT count(*)::int FROM event_occurrences o
                   WHERE o."organisationId" = x."organisationId" AND o."eventId" = x.id AND o.status <> 'cancelled') AS occurrences,
                 (SELECT count(*)::int FROM ticket_types t
                   WHERE t."organisationId" = x."organisationId" AND t."eventId" = x.id AND NOT t."isDeleted") AS types
            FROM events x WHERE x.id = ANY(event_ids)) c
   WHERE e.id = c.id AND (e."occurrenceCount", e."ticketCount") IS DISTINCT FROM (c.occurrences, c.types);
END $$;

-- Occurrences count unless cancelled: an insert or delete of one, a cancellation or its undoing, or a
-- move to another event recounts.
CREATE FUNCTION "event_occurrences_recount"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM events_recount(ARRAY(SELECT DISTINCT "eventId" FROM new_rows WHERE status <> 'cancelled'));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM events_recount(ARRAY(SELECT DISTINCT "eventId" FROM old_rows WHERE status <> 'cancelled'));
  ELSE
    PERFORM events_recount(ARRAY(
      SELECT DISTINCT unnest(ARRAY[n."eventId", o."eventId"])
        FROM new_rows n JOIN old_rows o ON o.id = n.id
       WHERE (n.status = 'cancelled', n."eventId") IS DISTINCT FROM (o.status = 'cancelled', o."eventId")));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "event_occurrences_recount_insert" AFTER INSERT ON "event_occurrences"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_recount();
CREATE TRIGGER "event_occurrences_recount_update" AFTER UPDATE ON "event_occurrences"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_recount();
CREATE TRIGGER "event_occurrences_recount_delete" AFTER DELETE ON "event_occurrences"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_recount();

-- Ticket types count unless deleted.
CREATE FUNCTION "ticket_types_recount"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM events_recount(ARRAY(SELECT DISTINCT "eventId" FROM new_rows WHERE NOT "isDeleted"));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM events_recount(ARRAY(SELECT DISTINCT "eventId" FROM old_rows WHERE NOT "isDeleted"));
  ELSE
    PERFORM events_recount(ARRAY(
      SELECT DISTINCT unnest(ARRAY[n."eventId", o."eventId"])
        FROM new_rows n JOIN old_rows o ON o.id = n.id
       WHERE (n."isDeleted", n."eventId") IS DISTINCT FROM (o."isDeleted", o."eventId")));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "ticket_types_recount_insert" AFTER INSERT ON "ticket_types"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_types_recount();
CREATE TRIGGER "ticket_types_recount_update" AFTER UPDATE ON "ticket_types"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_types_recount();
CREATE TRIGGER "ticket_types_recount_delete" AFTER DELETE ON "ticket_types"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_types_recount();
