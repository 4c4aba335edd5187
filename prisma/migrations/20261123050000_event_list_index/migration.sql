-- CreateIndex
CREATE INDEX "events_list_idx" ON "events"("organisationId", "isDeleted", "createdAt" DESC, "id" DESC);

