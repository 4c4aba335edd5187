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

/** The pending deliveries aliased `earlier` that the delivery aliased `d` waits for: its object's, to its endpoint, before it. */
function waitedFor(d: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`earlier."endpointId" = ${d}."endpointId" AND earlier."orderingKey" = ${d}."orderingKey"
       AND earlier.sequence < ${d}.sequence AND earlier.status = 'pending'`;
}

/** True where the delivery aliased `d` must wait: an earlier delivery of its object to its endpoint is pending. */
export function heldBehindEarlier(alias: string): Prisma.Sql {
  const d = Prisma.raw(alias);
  return Prisma.sql`(${d}."orderingKey" IS NOT NULL AND EXISTS (SELECT 1 FROM webhook_deliveries earlier WHERE ${waitedFor(d)}))`;
}

/** The first pending delivery that delivery `deliveryId` waits for, if any (a resend may not overtake it). */
export async function firstWaitedFor(db: Pick<Database, '$queryRaw'>, deliveryId: string): Promise<string | undefined> {
  const rows = await db.$queryRaw<Array<{ id: string }>>`
    SELECT earlier.id FROM webhook_deliveries d JOIN webhook_deliveries earlier ON ${waitedFor(Prisma.raw('d'))}
     WHERE d.id = ${deliveryId} AND d."orderingKey" IS NOT NULL
     ORDER BY earlier.sequence LIMIT 1`;
  return rows[0]?.id;
}

/** A settled delivery of an ordered endpoint: what its object's next delivery is found by. */
export interface Settled {
  endpointId: string;
  orderingKey: string | null;
}

/** The pending delivery with the lowest sequence of the settled one's object and endpoint. */
function nextOf(settled: Settled): Prisma.Sql {
  return Prisma.sql`SELECT id FROM webhook_deliveries
     WHERE "endpointId" = ${settled.endpointId} AND "orderingKey" = ${settled.orderingKey} AND status = 'pending'
     ORDER BY sequence LIMIT 1`;
}

/**
 * The delivery of the same object and endpoint that may go now that `settled` is settled: the
 * pending one with the next sequence, unless it is claimed already. Empty when nothing waits.
 */
export async function nextInLine(db: Database, settled: Settled): Promise<string[]> {
  if (settled.orderingKey === null) return [];
  const rows = await db.$queryRaw<Array<{ id: string }>>`
    SELECT d.id FROM webhook_deliveries d WHERE d.id = (${nextOf(settled)}) AND d."batchId" IS NULL`;
  return rows.map((row) => row.id);
}

/**
 * The statement that claims into `batchId` (whose workflow runs already) the next delivery of the
 * settled one's object and endpoint, when it waits for nothing else and no one has claimed it,
 * answering its id: deliver.ts's loadDeliveries runs it and loads what it claimed in one round trip.
 * Null when the settled delivery has no object.
 */
export function claimNextInLine(batchId: string, settled: Settled): Prisma.Sql | null {
  if (settled.orderingKey === null) return null;
  return Prisma.sql`
    UPDATE webhook_deliveries d SET "batchId" = ${batchId}, "workflowStartedAt" = now(), "updatedAt" = now()
     WHERE d.id = (${nextOf(settled)})
       AND d."batchId" IS NULL AND d."workflowStartedAt" IS NULL AND d.status = 'pending' AND NOT ${heldBehindEarlier('d')}
    RETURNING d.id`;
}
