-- Revenue of each inventory row (one ticket type at one occurrence): confirmed sales less refunds
-- and cancellations, gross of fees, in minor units per ISO 4217 currency ({"EUR": 12500}). It moves
-- with "sold", in the same UPDATE (src/services/inventory.ts), so admin screens read money without
-- scanning orders. Keyed by currency: a ticket type's currency may change between two sales.
ALTER TABLE "inventories" ADD COLUMN "revenue" JSONB NOT NULL DEFAULT '{}';

-- Money is never negative: every amount is a number of 0 or more.
ALTER TABLE "inventories" ADD CONSTRAINT "inventories_revenue_check"
  CHECK (jsonb_typeof("revenue") = 'object' AND NOT jsonb_path_exists("revenue", '$.* ? (@.type() != "number" || @ < 0)'));

-- `revenue` with `amount` (minor units, negative to take back) added to `currency`; a currency whose
-- amount comes back to 0 is left out, so a row reads as if recomputed from its confirmed orders.
CREATE FUNCTION "revenue_plus"(revenue jsonb, currency text, amount bigint) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN coalesce((revenue->>currency)::bigint, 0) + amount = 0 THEN revenue - currency
              ELSE jsonb_set(revenue, ARRAY[currency], to_jsonb(coalesce((revenue->>currency)::bigint, 0) + amount)) END
$$;

-- Rows sold before: the line totals of the orders confirmed now (refunded and cancelled ones took
-- back what they added). test/sales/revenue.test.ts reruns this statement and compares.
UPDATE "inventories" i SET "revenue" = r."revenue"
  FROM (SELECT s."organisationId", s."ticketTypeId", s."occurrenceId", jsonb_object_agg(s.currency, s.amount) AS "revenue"
          FROM (SELECT li."organisationId", li."ticketTypeId", li."occurrenceId", li.currency, sum(li."totalAmount") AS amount
                  FROM "order_line_items" li
                  JOIN "orders" o ON o."organisationId" = li."organisationId" AND o.id = li."orderId"
                 WHERE o.status = 'confirmed'
                 GROUP BY li."organisationId", li."ticketTypeId", li."occurrenceId", li.currency
                HAVING sum(li."totalAmount") <> 0) s
         GROUP BY s."organisationId", s."ticketTypeId", s."occurrenceId") r
 WHERE i."organisationId" = r."organisationId" AND i."ticketTypeId" = r."ticketTypeId" AND i."occurrenceId" = r."occurrenceId";
