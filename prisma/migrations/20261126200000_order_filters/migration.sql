-- Admin screens filter orders by the event or occurrence of a line, and poll for changed orders.
CREATE INDEX "order_line_items_organisationId_eventId_idx" ON "order_line_items"("organisationId", "eventId");
CREATE INDEX "order_line_items_organisationId_occurrenceId_idx" ON "order_line_items"("organisationId", "occurrenceId");
CREATE INDEX "orders_organisationId_updatedAt_idx" ON "orders"("organisationId", "updatedAt");
