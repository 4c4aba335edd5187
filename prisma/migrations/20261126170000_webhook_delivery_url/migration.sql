-- A delivery keeps the URL its endpoint had when it was recorded, so that a recovery resends only
-- the deliveries made for the endpoint's current URL (unless the caller includes the others), not
-- whatever a changed URL points at now. Deliveries recorded before are taken to have been made for
-- their endpoint's URL as it is now: nothing records an earlier one.
ALTER TABLE "webhook_deliveries" ADD COLUMN "url" TEXT;

UPDATE "webhook_deliveries" d
   SET "url" = e."url"
  FROM "webhook_endpoints" e
 WHERE e."organisationId" = d."organisationId" AND e."id" = d."endpointId";

ALTER TABLE "webhook_deliveries" ALTER COLUMN "url" SET NOT NULL;
