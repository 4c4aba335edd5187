-- Stored answers are encrypted with the secrets key (one AES-GCM ciphertext of status headers and
-- body) instead of kept as JSON: an answer may name a sales session or a customer, and one that
-- carried key material must never be readable from this table. Answers stored before were in the
-- clear; they are dropped (a retry of such a request within its day runs again or, for the routes
-- that create keys, is answered as a new request).
DELETE FROM "idempotency_keys";

ALTER TABLE "idempotency_keys"
  DROP COLUMN "responseBody",
  DROP COLUMN "responseHeaders",
  ADD COLUMN "claimToken" TEXT,
  ADD COLUMN "answer" TEXT,
  ADD COLUMN "replayable" BOOLEAN NOT NULL DEFAULT true;
