-- The open subscription streams of every API process, so that a credential's and an
-- organisation's bounds hold across processes (src/live/live.ts): a stream takes a place as it
-- starts and gives it back as it ends. Its process renews its places' lease while it runs; the
-- places of a process that died without giving them back lapse when their lease ends.
CREATE TABLE "live_stream_places" (
  "id" TEXT PRIMARY KEY,
  "organisationId" TEXT NOT NULL,
  "credential" TEXT NOT NULL,
  "heldBy" TEXT NOT NULL,
  "leaseUntil" TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX "live_stream_places_organisationId_idx" ON "live_stream_places" ("organisationId");
CREATE INDEX "live_stream_places_credential_idx" ON "live_stream_places" ("credential");
CREATE INDEX "live_stream_places_heldBy_idx" ON "live_stream_places" ("heldBy");

-- Takes a place for stream `place` when the credential (in whichever organisation: a person may
-- belong to several) and the organisation are under their bounds, lapsed places aside, in one
-- statement: streams of one credential or one organisation opening at once through several
-- processes take their places one after another. The credential's lock is taken before the
-- organisation's, always, so two admissions never wait on each other in a cycle. Answers null, or
-- the bound that refused. Times are the clock's as the statement runs (clock_timestamp), not its
-- transaction's start: an admission that waited on the locks counts as of when it counts.
CREATE FUNCTION "live_stream_take_place"(place TEXT, org TEXT, cred TEXT, holder TEXT, per_credential INT, per_organisation INT, lease_ms INT)
RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('live_stream_places credential ' || cred, 0));
  PERFORM pg_advisory_xact_lock(hashtextextended('live_stream_places organisation ' || org, 0));
  DELETE FROM live_stream_places WHERE ("organisationId" = org OR credential = cred) AND "leaseUntil" <= clock_timestamp();
  IF (SELECT count(*) FROM live_stream_places WHERE credential = cred AND "leaseUntil" > clock_timestamp()) >= per_credential THEN
    RETURN 'LIVE_SUBSCRIPTIONS_PER_CREDENTIAL';
  END IF;
  IF (SELECT count(*) FROM live_stream_places WHERE "organisationId" = org AND "leaseUntil" > clock_timestamp()) >= per_organisation THEN
    RETURN 'LIVE_SUBSCRIPTIONS_PER_ORGANISATION';
  END IF;
  INSERT INTO live_stream_places (id, "organisationId", credential, "heldBy", "leaseUntil")
    VALUES (place, org, cred, holder, clock_timestamp() + lease_ms * interval '1 millisecond');
  RETURN NULL;
END $$;
