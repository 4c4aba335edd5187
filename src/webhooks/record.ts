import type { TenantDatabase } from '../db/tenant.ts';
import type { Database } from '../db/client.ts';
import { newId } from '../ids.ts';
import { CURRENT_VERSION } from '../versions.ts';
import type { WebhookEventType } from './event-types.ts';
import type { Payload } from './payloads.ts';

/** A transaction client of either handle. */
type Tx = Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0] | Parameters<Parameters<Database['$transaction']>[0]>[0];

export interface RecordedWebhookEvent {
  eventId: string;
  deliveryIds: string[];
}

/**
 * Records a source event (wev_) and one pending delivery (whd_) per enabled, not deleted endpoint
 * of the account subscribed to `type` — in the caller's transaction, so the change and its
 * webhooks commit or roll back together. The dispatcher starts the deliveries' batch after the
 * commit (and the sweep any it could not start).
 *
 * Two statements (raw SQL): it runs inside the requests that change things, and the model API's
 * three round trips cost those requests about a millisecond of CPU more (bench/webhooks.ts).
 */
export async function recordWebhookEvent(
  tx: Tx,
  event: { organisationId: string; accountId: string; type: WebhookEventType; payload: Payload },
): Promise<RecordedWebhookEvent> {
  const client = tx as unknown as Database;
  const eventId = newId('webhookEvent');
  const endpoints = await client.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM webhook_endpoints
     WHERE "organisationId" = ${event.organisationId} AND "accountId" = ${event.accountId} AND enabled AND "deletedAt" IS NULL
       AND (cardinality("eventTypes") = 0 OR ${event.type} = ANY("eventTypes"))
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
