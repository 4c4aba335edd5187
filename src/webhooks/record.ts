import type { TenantDatabase } from '../db/tenant.ts';
import type { Database } from '../db/client.ts';
import type { TenantSql, TenantStatements } from '../db/sql.ts';
import { newId } from '../ids.ts';
import { CURRENT_VERSION } from '../versions.ts';
import type { WebhookEventType } from './event-types.ts';
import type { Payload } from './payloads.ts';

/** The transaction client of a handle: the tenant-scoped one of a request, or the whole database (worker sweeps). */
export type TransactionOf<D extends TenantDatabase | Database> = Parameters<Parameters<D['$transaction']>[0]>[0];
type Tx = TransactionOf<TenantDatabase> | TransactionOf<Database>;

export interface WebhookEventInput {
  organisationId: string;
  accountId: string;
  type: WebhookEventType;
  payload: Payload;
  /** Only this endpoint of the account (a test delivery), not every subscriber. */
  endpointId?: string;
}

/** Records source events into the transaction it was handed to; see `withWebhooks`. */
export interface WebhookRecorder {
  /** Records the event and its deliveries in the transaction; answers the deliveries' ids. */
  record(event: WebhookEventInput): Promise<string[]>;
}

/**
 * Runs `work` in one transaction of `db` with a recorder of webhooks, then hands every delivery
 * recorded to the dispatcher after the commit (none if the transaction rolled back). The one way
 * services record webhooks: the change and its webhooks commit together, and the dispatch that
 * must follow the commit cannot be forgotten (the dispatcher's sweep would start a forgotten
 * delivery only seconds later).
 */
export async function withWebhooks<D extends TenantDatabase | Database, T>(
  db: D,
  dispatcher: { dispatch(deliveryIds: readonly string[]): void },
  work: (tx: TransactionOf<D>, webhooks: WebhookRecorder) => Promise<T>,
): Promise<T> {
  const deliveryIds: string[] = [];
  // One call signature for both handles: their $transaction differ only in the models' scoping.
  const result = await (db as Database).$transaction(async (tx) => {
    return work(tx, {
      async record(event) {
        const recorded = await recordWebhookEvent(tx, event);
        deliveryIds.push(...recorded.deliveryIds);
        return recorded.deliveryIds;
      },
    });
  });
  dispatcher.dispatch(deliveryIds);
  return result;
}

export interface RecordedWebhookEvent {
  eventId: string;
  deliveryIds: string[];
}

/**
 * Records a source event (wev_) and one pending delivery (whd_) per enabled, not deleted endpoint
 * of the account subscribed to `type` (or only `endpointId`) — in the caller's transaction, so the change and its
 * webhooks commit or roll back together. The dispatcher starts the deliveries' batch after the
 * commit (and the sweep any it could not start).
 *
 * Two statements (raw SQL): it runs inside the requests that change things, and the model API's
 * three round trips cost those requests about a millisecond of CPU more (bench/webhooks.ts).
 */
export async function recordWebhookEvent(tx: Tx, event: WebhookEventInput): Promise<RecordedWebhookEvent> {
  const client = tx as unknown as Database;
  const eventId = newId('webhookEvent');
  const endpoints = await client.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM webhook_endpoints
     WHERE "organisationId" = ${event.organisationId} AND "accountId" = ${event.accountId} AND enabled AND "deletedAt" IS NULL
       AND (cardinality("eventTypes") = 0 OR ${event.type} = ANY("eventTypes"))
       AND (${event.endpointId ?? null}::text IS NULL OR id = ${event.endpointId ?? null})
     ORDER BY "createdAt", id`;
  const deliveryIds = endpoints.map(() => newId('webhookDelivery'));
  await client.$executeRaw`
    WITH source AS (
      INSERT INTO webhook_events (id, "organisationId", "accountId", type, payload, version)
      VALUES (${eventId}, ${event.organisationId}, ${event.accountId}, ${event.type}, ${JSON.stringify(event.payload)}::jsonb, ${CURRENT_VERSION})
    )
    INSERT INTO webhook_deliveries (id, "organisationId", "accountId", "eventId", "endpointId", "eventType", "updatedAt")
    SELECT delivery, ${event.organisationId}, ${event.accountId}, ${eventId}, endpoint, ${event.type}, now()
      FROM unnest(${deliveryIds}::text[], ${endpoints.map((e) => e.id)}::text[]) AS d(delivery, endpoint)`;
  return { eventId, deliveryIds };
}

/** Records source events into the raw transaction it was handed to; see `withWebhooksSql`. */
export interface WebhookBatchRecorder {
  /** Records the events (in one statement) and their deliveries in the transaction. */
  record(...events: WebhookEventInput[]): Promise<void>;
}

/**
 * `withWebhooks` for the hand-written statements of the sales path (src/db/sql.ts): `work` runs in
 * one transaction of the organisation, events recorded there commit with the change or not at all,
 * and their deliveries are handed to the dispatcher after the commit.
 */
export async function withWebhooksSql<T>(
  sql: TenantSql,
  dispatcher: { dispatch(deliveryIds: readonly string[]): void },
  work: (tx: TenantStatements, webhooks: WebhookBatchRecorder) => Promise<T>,
): Promise<T> {
  const deliveryIds: string[] = [];
  const result = await sql.transaction((tx) =>
    work(tx, {
      async record(...events) {
        deliveryIds.push(...(await recordWebhookEventsSql(tx, events)));
      },
    }),
  );
  dispatcher.dispatch(deliveryIds);
  return result;
}

/**
 * `recordWebhookEvent` for several events of the transaction's organisation in one statement: the
 * source events, and one delivery per enabled, not deleted endpoint of each event's account
 * subscribed to its type (delivery ids drawn by the database's new_id, the same form as newId's).
 * Answers the deliveries' ids.
 */
export async function recordWebhookEventsSql(tx: TenantStatements, events: readonly WebhookEventInput[]): Promise<string[]> {
  if (events.length === 0) return [];
  for (const event of events) if (event.organisationId !== tx.organisationId) throw new Error('a webhook of another organisation');
  const sql = tx.statement();
  const ids = sql.param(events.map(() => newId('webhookEvent')));
  const accounts = sql.param(events.map((event) => event.accountId));
  const types = sql.param(events.map((event) => event.type));
  const payloads = sql.param(events.map((event) => JSON.stringify(event.payload)));
  const only = sql.param(events.map((event) => event.endpointId ?? null));
  sql.add(`WITH input AS (
      SELECT * FROM unnest(${ids}::text[], ${accounts}::text[], ${types}::text[], ${payloads}::text[], ${only}::text[])
        AS i(event_id, account_id, type, payload, endpoint_id)
    ), source AS (
      INSERT INTO webhook_events ("organisationId", id, "accountId", type, payload, version)
      SELECT $1, event_id, account_id, type, payload::jsonb, ${sql.param(CURRENT_VERSION)} FROM input
    )
    INSERT INTO webhook_deliveries ("organisationId", id, "accountId", "eventId", "endpointId", "eventType", "updatedAt")
    SELECT $1, new_id('whd'), i.account_id, i.event_id, e.id, i.type, now()
      FROM input i JOIN webhook_endpoints e
        ON e."organisationId" = $1 AND e."accountId" = i.account_id AND e.enabled AND e."deletedAt" IS NULL
       AND (cardinality(e."eventTypes") = 0 OR i.type = ANY(e."eventTypes")) AND (i.endpoint_id IS NULL OR e.id = i.endpoint_id)
    RETURNING id`);
  const rows = await tx.rows<{ id: string }>(sql);
  return rows.map((row) => row.id);
}
