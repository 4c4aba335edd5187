-- An order line keeps the event of its occurrence and the ticket type's name as they were at
-- checkout, as a receipt does: a ticket type renamed later does not rename what was bought. Reading
-- an order's lines no longer joins the occurrence and the ticket type (the checkout's
-- answer and every order read loaded them again, one more statement each).
ALTER TABLE "order_line_items" ADD COLUMN "eventId" TEXT, ADD COLUMN "ticketTypeName" TEXT;

UPDATE "order_line_items" li
   SET "eventId" = o."eventId", "ticketTypeName" = t.name
  FROM "event_occurrences" o, "ticket_types" t
 WHERE o."organisationId" = li."organisationId" AND o.id = li."occurrenceId"
   AND t."organisationId" = li."organisationId" AND t.id = li."ticketTypeId";

ALTER TABLE "order_line_items" ALTER COLUMN "eventId" SET NOT NULL, ALTER COLUMN "ticketTypeName" SET NOT NULL;
