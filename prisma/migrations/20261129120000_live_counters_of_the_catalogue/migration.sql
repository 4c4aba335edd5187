-- An occurrence's sales counters move with more than its inventory rows' updates (inventories_live,
-- 20261127140000_live_events): a pair's first hold inserts its row (an INSERT ... ON CONFLICT's
-- UPDATE trigger sees only the rows it updated), and the catalogue sets the capacity and what is
-- counted (src/services/sales-counters.ts): an occurrence's capacity or cancellation, a ticket
-- type's capacity, addition or removal. Each announces the occurrences it moves, like the sales do.

CREATE TRIGGER "inventories_live_insert" AFTER INSERT ON "inventories"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION live_counters_moved();

CREATE FUNCTION "live_occurrence_counters_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_live', 'c ' || o || ' ' || occ)
    FROM (SELECT DISTINCT n."organisationId" AS o, n.id AS occ
            FROM new_rows n JOIN old_rows p ON p.id = n.id
           WHERE (n.capacity, n.status) IS DISTINCT FROM (p.capacity, p.status)) s;
  RETURN NULL;
END $$;
CREATE TRIGGER "event_occurrences_live" AFTER UPDATE ON "event_occurrences"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION live_occurrence_counters_moved();

-- A ticket type counts at every occurrence of its event.
CREATE FUNCTION "live_ticket_type_counters_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM pg_notify('service_live', 'c ' || o || ' ' || occ)
      FROM (SELECT DISTINCT e."organisationId" AS o, e.id AS occ
              FROM new_rows n
              JOIN event_occurrences e ON e."organisationId" = n."organisationId" AND e."eventId" = n."eventId") s;
  ELSE
    PERFORM pg_notify('service_live', 'c ' || o || ' ' || occ)
      FROM (SELECT DISTINCT e."organisationId" AS o, e.id AS occ
              FROM new_rows n
              JOIN old_rows p ON p.id = n.id
              JOIN event_occurrences e ON e."organisationId" = n."organisationId" AND e."eventId" = n."eventId"
             WHERE (n.capacity, n."isDeleted") IS DISTINCT FROM (p.capacity, p."isDeleted")) s;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "ticket_types_live_insert" AFTER INSERT ON "ticket_types"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION live_ticket_type_counters_moved();
CREATE TRIGGER "ticket_types_live_update" AFTER UPDATE ON "ticket_types"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION live_ticket_type_counters_moved();
