-- Live events: what GraphQL subscriptions stream to admin screens (src/live/). A change writes its
-- live event from its own transaction, so a rolled-back change streams nothing, and announces it on
-- the 'service_live' channel, which PostgreSQL delivers to every API process at commit, in commit
-- order. The rows are kept for the replay window only: a client reconnecting with Last-Event-ID
-- reads what it missed from here (pruned by src/live/hub.ts).
--
-- The row-level triggers are deferred to the end of the changing transaction: a live event's id is
-- then taken moments before its commit, so ids follow commit order but for transactions committing
-- in the same instant (a reconnecting client replays in id order).
--
-- Notice payloads (space-separated):
--   e <id> <organisationId> <topic> <kind> <subjectId> <accountId> [<eventId>,...]
--   c <organisationId> <occurrenceId>     sales counters of an occurrence moved (no row: a counter
--                                         stream sends the current counters, never a history)

CREATE TABLE "live_events" (
  "id" BIGSERIAL PRIMARY KEY,
  "organisationId" TEXT NOT NULL,
  "topic" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "subjectId" TEXT NOT NULL,
  "accountId" TEXT,
  "eventIds" TEXT[] NOT NULL DEFAULT '{}',
  "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT now()
);
CREATE INDEX "live_events_topic_id_idx" ON "live_events" ("topic", "id");
CREATE INDEX "live_events_createdAt_idx" ON "live_events" ("createdAt");

CREATE FUNCTION "live_event"(org TEXT, topic TEXT, kind TEXT, subject TEXT, account TEXT, event_ids TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  new_id BIGINT;
BEGIN
  INSERT INTO live_events ("organisationId", topic, kind, "subjectId", "accountId", "eventIds")
    VALUES (org, topic, kind, subject, account, event_ids) RETURNING id INTO new_id;
  PERFORM pg_notify('service_live', concat_ws(' ', 'e', new_id, org, topic, kind, subject, coalesce(account, '-'), array_to_string(event_ids, ',')));
END $$;

-- Orders: created, confirmed, cancelled, refunded; at the end of the transaction the order's lines
-- (and so its events) exist.
CREATE FUNCTION "live_order_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind TEXT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    kind := 'created';
  ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
    kind := NEW.status::text;
  ELSE
    RETURN NULL;
  END IF;
  PERFORM live_event(NEW."organisationId", 'orders:' || NEW."accountId", kind, NEW.id, NEW."accountId",
    coalesce((SELECT array_agg(DISTINCT l."eventId" ORDER BY l."eventId") FROM order_line_items l
      WHERE l."organisationId" = NEW."organisationId" AND l."orderId" = NEW.id), '{}'));
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER "orders_live" AFTER INSERT OR UPDATE OF status ON "orders"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION live_order_changed();

-- Webhook deliveries: recorded, each attempt, settlement.
CREATE FUNCTION "live_delivery_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM live_event(NEW."organisationId", 'deliveries:' || NEW."endpointId", NEW.status::text, NEW.id, NEW."accountId", '{}');
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER "webhook_deliveries_live_insert" AFTER INSERT ON "webhook_deliveries"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION live_delivery_changed();
CREATE CONSTRAINT TRIGGER "webhook_deliveries_live_update" AFTER UPDATE OF status, "attemptCount" ON "webhook_deliveries"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW."attemptCount" IS DISTINCT FROM OLD."attemptCount")
  EXECUTE FUNCTION live_delivery_changed();

-- Audit entries of the organisation.
CREATE FUNCTION "live_audit_entry_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM live_event(NEW."organisationId", 'audit', NEW.action, NEW.id, NEW."accountId", '{}');
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER "audit_entries_live" AFTER INSERT ON "audit_entries"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION live_audit_entry_added();

-- Sales counters: one notice per occurrence per statement (PostgreSQL folds a transaction's
-- identical notices into one).
CREATE FUNCTION "live_counters_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('service_live', 'c ' || o || ' ' || occ)
    FROM (SELECT DISTINCT n."organisationId" AS o, n."occurrenceId" AS occ FROM new_rows n) s;
  RETURN NULL;
END $$;
CREATE TRIGGER "inventories_live" AFTER UPDATE ON "inventories"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION live_counters_moved();
