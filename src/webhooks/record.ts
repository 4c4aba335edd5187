import type { TenantDatabase } from '../db/tenant.ts';
import type { Database } from '../db/client.ts';
import { Statement, type TenantSql, type TenantStatements, type TransactionStatements } from '../db/sql.ts';
import { newId } from '../ids.ts';
import { CURRENT_VERSION } from '../versions.ts';
import { WEBHOOK_TYPES, type WebhookEventType } from './event-types.ts';
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
  /** The object the event is about, when not the one its type reads from the payload (event-types.ts `objectOf`). */
  objectId?: string;
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
 * One statement (raw SQL, the same as `recordWebhookEventsSql`'s): it runs inside the requests
 * that change things, and the model API's three round trips cost those requests about a
 * millisecond of CPU more (bench/webhooks.ts).
 */
export async function recordWebhookEvent(tx: Tx, event: WebhookEventInput): Promise<RecordedWebhookEvent> {
  const { statement, eventIds } = recordingStatement(event.organisationId, [event]);
  const rows = await (tx as unknown as Database).$queryRawUnsafe<Array<{ id: string }>>(statement.text, ...statement.values);
  return { eventId: eventIds[0]!, deliveryIds: rows.map((row) => row.id) };
}

/**
 * The one statement that records source events of one organisation (`$1`) and their deliveries:
 * one per enabled, not deleted endpoint of each event's account subscribed to its type (or only
 * its `endpointId`), in the endpoints' order, each with the URL its endpoint has now (what the
 * delivery is made for), with ids drawn by the database's new_id (the same form as newId's). It
 * answers the deliveries' ids.
 *
 * Each event takes the next sequence numbers of its object (webhook_sequences, upserted here: its
 * row lock makes a second transaction announcing the same object wait for this one's commit, so
 * numbers follow commit order). A delivery to an endpoint that orders per object carries the object
 * as its ordering key and the event's sequence (src/webhooks/ordering.ts).
 */
function recordingStatement(organisationId: string, events: readonly WebhookEventInput[]): { statement: Statement; eventIds: string[] } {
  for (const event of events) if (event.organisationId !== organisationId) throw new Error('a webhook of another organisation');
  const sql = new Statement(organisationId);
  const eventIds = events.map(() => newId('webhookEvent'));
  const ids = sql.param(eventIds);
  const accounts = sql.param(events.map((event) => event.accountId));
  const types = sql.param(events.map((event) => event.type));
  const payloads = sql.param(events.map((event) => JSON.stringify(event.payload)));
  const only = sql.param(events.map((event) => event.endpointId ?? null));
  // A payload that names no object (none of the views' does) is numbered alone, as its own object.
  const objects = sql.param(events.map((event, i) => event.objectId ?? WEBHOOK_TYPES[event.type].objectOf(event.payload) ?? eventIds[i]!));
  sql.add(`WITH input AS (
      SELECT * FROM unnest(${ids}::text[], ${accounts}::text[], ${types}::text[], ${payloads}::text[], ${only}::text[], ${objects}::text[])
        WITH ORDINALITY AS i(event_id, account_id, type, payload, endpoint_id, object_id, place)
    ), taken AS (
      INSERT INTO webhook_sequences ("organisationId", "objectId", last)
      SELECT $1, object_id, count(*) FROM input GROUP BY object_id ORDER BY object_id
      ON CONFLICT ("organisationId", "objectId") DO UPDATE SET last = webhook_sequences.last + excluded.last
      RETURNING "objectId", last
    ), numbered AS (
      SELECT i.*, (t.last - count(*) OVER (PARTITION BY i.object_id)
                   + row_number() OVER (PARTITION BY i.object_id ORDER BY i.place))::int AS sequence
        FROM input i JOIN taken t ON t."objectId" = i.object_id
    ), source AS (
      INSERT INTO webhook_events ("organisationId", id, "accountId", type, payload, version, "objectId", sequence)
      SELECT $1, event_id, account_id, type, payload::jsonb, ${sql.param(CURRENT_VERSION)}, object_id, sequence FROM numbered
    )
    INSERT INTO webhook_deliveries ("organisationId", id, "accountId", "eventId", "endpointId", "eventType", url, "orderingKey", sequence, "updatedAt")
    SELECT $1, new_id('whd'), i.account_id, i.event_id, e.id, i.type, e.url,
           CASE WHEN e.ordering = 'per_object' THEN i.object_id END, i.sequence, now()
      FROM numbered i JOIN webhook_endpoints e
        ON e."organisationId" = $1 AND e."accountId" = i.account_id AND e.enabled AND e."deletedAt" IS NULL
       AND (cardinality(e."eventTypes") = 0 OR i.type = ANY(e."eventTypes")) AND (i.endpoint_id IS NULL OR e.id = i.endpoint_id)
     ORDER BY i.place, e."createdAt", e.id
    RETURNING id`);
  return { statement: sql, eventIds };
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
  work: (tx: TransactionStatements, webhooks: WebhookBatchRecorder) => Promise<T>,
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
  const { statement: sql } = recordingStatement(tx.organisationId, events);
  const rows = await tx.rows<{ id: string }>(sql);
  return rows.map((row) => row.id);
}
