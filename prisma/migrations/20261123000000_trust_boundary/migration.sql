-- The trust boundary.

-- Invitation codes are secrets: only their sha256 is kept (and a non-redeemable hint), so nobody
-- who reads invitations can redeem one; the code itself lives only in the mail.
ALTER TABLE "invitations" ADD COLUMN "codeHash" TEXT, ADD COLUMN "codeHint" TEXT;
UPDATE "invitations" SET "codeHash" = encode(sha256(convert_to("code", 'UTF8')), 'hex'), "codeHint" = left("code", 4);
ALTER TABLE "invitations" ALTER COLUMN "codeHash" SET NOT NULL, ALTER COLUMN "codeHint" SET NOT NULL;
DROP INDEX "invitations_code_key";
ALTER TABLE "invitations" DROP COLUMN "code";
CREATE UNIQUE INDEX "invitations_codeHash_key" ON "invitations"("codeHash");

-- People live in a realm: "global" (proved control of the email), or the organisation whose own
-- identity provider created them and outside of which they do not exist.
ALTER TABLE "people" ADD COLUMN "realm" TEXT NOT NULL DEFAULT 'global';
ALTER TABLE "people" ADD CONSTRAINT "people_realm_check" CHECK ("realm" = 'global' OR "realm" LIKE 'org\_%');
DROP INDEX "people_email_key";
CREATE UNIQUE INDEX "people_realm_email_key" ON "people"("realm", "email");

-- Tickets one storefront client holds at once are counted by this key.
ALTER TABLE "orders" ADD COLUMN "clientKey" TEXT;
CREATE INDEX "orders_organisationId_clientKey_status_idx" ON "orders"("organisationId", "clientKey", "status");

-- Rate limits and throttles, shared by every API process.
CREATE TABLE "rate_limit_windows" (
    "key" TEXT NOT NULL,
    "windowStart" TIMESTAMPTZ(3) NOT NULL,
    "count" INTEGER NOT NULL,
    CONSTRAINT "rate_limit_windows_pkey" PRIMARY KEY ("key")
);
CREATE INDEX "rate_limit_windows_windowStart_idx" ON "rate_limit_windows"("windowStart");

CREATE TABLE "throttles" (
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL,
    "lastFailureAt" TIMESTAMPTZ(3) NOT NULL,
    "blockedUntil" TIMESTAMPTZ(3),
    CONSTRAINT "throttles_pkey" PRIMARY KEY ("key")
);
CREATE INDEX "throttles_lastFailureAt_idx" ON "throttles"("lastFailureAt");
