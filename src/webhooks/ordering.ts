import type { Database } from '../db/client.ts';
import { Prisma } from '../generated/prisma/client.ts';

/**
 * Ordered delivery (an endpoint's `ordering: per_object`): the deliveries of one object (an order
 * with its ticket events, a customer, an event) reach the endpoint one at a time, in the order of
 * their sequence numbers, while other objects' flow in parallel.
 *
 * The outbox does it. Such a delivery is recorded with its object as `orderingKey` and the event's
 * `sequence` (src/webhooks/record.ts), and it is not claimed for a batch (src/webhooks/dispatcher.ts)
 * while an earlier delivery of the same key to the same endpoint is pending: so at most one of an
 * object's deliveries is ever in flight to an endpoint, and a failing one (retrying on its schedule)
 * holds only its own object's later ones, until it succeeds or fails for good. When it settles, the
 * worker that settled it starts the next one at once (`nextInLine`); the dispatcher's sweep claims
 * any it could not. Every process agrees because the rule lives in the claim statement, in PostgreSQL.
 */

/** True where the delivery aliased `d` must wait: an earlier delivery of its object to its endpoint is pending. */
export function heldBehindEarlier(alias: string): Prisma.Sql {
  const d = Prisma.raw(alias);
  return Prisma.sql`(${d}."orderingKey" IS NOT NULL AND EXISTS (
    SELECT 1 FROM webhook_deliveries earlier
     WHERE earlier."endpointId" = ${d}."endpointId" AND earlier."orderingKey" = ${d}."orderingKey"
       AND earlier.sequence < ${d}.sequence AND earlier.status = 'pending'))`;
}

/**
 * The delivery of the same object and endpoint that may go now that `settled` is settled: the
 * pending one with the next sequence, unless it is claimed already. Empty when nothing waits.
 */
export async function nextInLine(db: Database, settled: { endpointId: string; orderingKey: string | null }): Promise<string[]> {
  if (settled.orderingKey === null) return [];
  const rows = await db.$queryRaw<Array<{ id: string; batchId: string | null }>>`
    SELECT id, "batchId" FROM webhook_deliveries
     WHERE "endpointId" = ${settled.endpointId} AND "orderingKey" = ${settled.orderingKey} AND status = 'pending'
     ORDER BY sequence
     LIMIT 1`;
  return rows.filter((row) => row.batchId === null).map((row) => row.id);
}
