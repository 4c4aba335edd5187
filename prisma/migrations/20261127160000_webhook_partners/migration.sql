-- How an endpoint is signed and whether its deliveries of one object are ordered (docs/webhooks.md).
ALTER TABLE "webhook_endpoints"
  ADD COLUMN "signatureScheme" TEXT NOT NULL DEFAULT 'service'
    CONSTRAINT "webhook_endpoints_signatureScheme_check" CHECK ("signatureScheme" IN ('service', 'standard')),
  ADD COLUMN "ordering" TEXT NOT NULL DEFAULT 'none'
    CONSTRAINT "webhook_endpoints_ordering_check" CHECK ("ordering" IN ('none', 'per_object'));

-- The object a source event is about (an order for its order.* and ticket.* events, a customer, an
-- event) and its place among that object's events: 1, 2, 3... in commit order. Events recorded
-- before sequences existed have neither.
ALTER TABLE "webhook_events"
  ADD COLUMN "objectId" TEXT,
  ADD COLUMN "sequence" INTEGER;

-- The last sequence number handed out per object. Kept as long as the organisation: a number must
-- never be handed out twice, or a receiver would drop a new event as stale. The row lock taken by
-- the upsert also orders two transactions announcing the same object: the second waits for the
-- first to commit, so sequence order is commit order.
CREATE TABLE "webhook_sequences" (
  "organisationId" TEXT NOT NULL,
  "objectId" TEXT NOT NULL,
  "last" INTEGER NOT NULL,
  CONSTRAINT "webhook_sequences_pkey" PRIMARY KEY ("organisationId", "objectId"),
  CONSTRAINT "webhook_sequences_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- A delivery to an endpoint that orders per object carries the object (its ordering key) and the
-- event's sequence: it is not claimed for sending while an earlier one of the same key and endpoint
-- is pending. Null for endpoints that do not order.
ALTER TABLE "webhook_deliveries"
  ADD COLUMN "orderingKey" TEXT,
  ADD COLUMN "sequence" INTEGER;

CREATE INDEX "webhook_deliveries_endpointId_orderingKey_sequence_idx" ON "webhook_deliveries" ("endpointId", "orderingKey", "sequence");

-- The pull API lists an organisation's source events newest first.
CREATE INDEX "webhook_events_organisationId_createdAt_id_idx" ON "webhook_events" ("organisationId", "createdAt" DESC, id DESC);
