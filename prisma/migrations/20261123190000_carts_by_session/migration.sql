-- A sales session's carts (the pending orders a session may hold at once are counted through it).
CREATE INDEX "carts_organisationId_sessionId_idx" ON "carts"("organisationId", "sessionId");
