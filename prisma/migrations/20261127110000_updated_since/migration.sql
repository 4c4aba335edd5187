-- Admin screens poll lists for what changed since an instant (`updatedSince`); these lists can be
-- large, so the rows changed since then are found by index.
CREATE INDEX "events_organisationId_updatedAt_idx" ON "events"("organisationId", "updatedAt");
CREATE INDEX "customers_organisationId_updatedAt_idx" ON "customers"("organisationId", "updatedAt");
CREATE INDEX "passes_organisationId_updatedAt_idx" ON "passes"("organisationId", "updatedAt");
CREATE INDEX "webhook_deliveries_organisationId_updatedAt_idx" ON "webhook_deliveries"("organisationId", "updatedAt");

-- An invitation changes when it is resent (a new code and expiry) or redeemed: it keeps its last
-- change as other rows do. An existing row's is its creation or redemption, whichever is later.
ALTER TABLE "invitations" ADD COLUMN "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;
UPDATE "invitations" SET "updatedAt" = greatest("createdAt", "redeemedAt");
ALTER TABLE "invitations" ALTER COLUMN "updatedAt" DROP DEFAULT;

-- Events sort by the start of their first scheduled occurrence (`events(orderBy: {field: START_DATE})`):
-- kept on the event, so that a page sorts by a column instead of reading occurrences per row.
ALTER TABLE "events" ADD COLUMN "firstStartsAt" TIMESTAMPTZ(3);
CREATE INDEX "events_organisationId_isDeleted_firstStartsAt_id_idx" ON "events"("organisationId", "isDeleted", "firstStartsAt", "id");

UPDATE "events" e
   SET "firstStartsAt" = f.first
  FROM (SELECT "organisationId", "eventId", min("startsAt") AS first
          FROM "event_occurrences" WHERE status = 'scheduled' GROUP BY "organisationId", "eventId") f
 WHERE e."organisationId" = f."organisationId" AND e.id = f."eventId";

-- Recomputes firstStartsAt of the events `event_ids`. The events are locked first, in id order: each
-- statement of a function sees what committed before it began, so of two transactions changing
-- occurrences of one event, the one that locks it second reads the other's occurrences too, and its
-- value is the last one written.
CREATE FUNCTION "events_first_starts_at"(event_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(event_ids) = 0 THEN
    RETURN;
  END IF;
  PERFORM 1 FROM events WHERE id = ANY(event_ids) ORDER BY id FOR NO KEY UPDATE;
  UPDATE events e
     SET "firstStartsAt" = f.first
    FROM (SELECT x.id,
                 (SELECT min(o."startsAt") FROM event_occurrences o
                   WHERE o."organisationId" = x."organisationId" AND o."eventId" = x.id AND o.status = 'scheduled') AS first
            FROM events x WHERE x.id = ANY(event_ids)) f
   WHERE e.id = f.id AND e."firstStartsAt" IS DISTINCT FROM f.first;
END $$;

-- Every statement that adds, moves, cancels or removes occurrences keeps their events' firstStartsAt,
-- in its own transaction, whoever runs it (the use cases, the seed, fixtures, an operator's SQL).
CREATE FUNCTION "event_occurrences_first_start"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM events_first_starts_at(ARRAY(SELECT DISTINCT "eventId" FROM new_rows WHERE status = 'scheduled'));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM events_first_starts_at(ARRAY(SELECT DISTINCT "eventId" FROM old_rows WHERE status = 'scheduled'));
  ELSE
    PERFORM events_first_starts_at(ARRAY(
      SELECT DISTINCT unnest(ARRAY[n."eventId", o."eventId"])
        FROM new_rows n JOIN old_rows o ON o.id = n.id
       WHERE (n."startsAt", n.status, n."eventId") IS DISTINCT FROM (o."startsAt", o.status, o."eventId")));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "event_occurrences_first_start_insert" AFTER INSERT ON "event_occurrences"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_first_start();
CREATE TRIGGER "event_occurrences_first_start_update" AFTER UPDATE ON "event_occurrences"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_first_start();
CREATE TRIGGER "event_occurrences_first_start_delete" AFTER DELETE ON "event_occurrences"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION event_occurrences_first_start();
