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
 * webhooks commit or roll back together. The dispatcher starts the deliveries' workflows after
 * the commit (and retries any it could not start).
 */
export async function recordWebhookEvent(
  tx: Tx,
  event: { organisationId: string; accountId: string; type: WebhookEventType; payload: Payload },
): Promise<RecordedWebhookEvent> {
  const client = tx as unknown as Database;
  const eventId = newId('webhookEvent');
  await client.webhookEvent.create({
    data: {
      id: eventId,
      organisationId: event.organisationId,
      accountId: event.accountId,
      type: event.type,
      payload: event.payload,
      version: CURRENT_VERSION,
    },
  });
  const endpoints = await client.webhookEndpoint.findMany({
    where: {
      organisationId: event.organisationId,
      accountId: event.accountId,
      enabled: true,
      deletedAt: null,
      OR: [{ eventTypes: { isEmpty: true } }, { eventTypes: { has: event.type } }],
    },
    select: { id: true },
  });
  const deliveryIds = endpoints.map(() => newId('webhookDelivery'));
  if (endpoints.length > 0) {
    await client.webhookDelivery.createMany({
      data: endpoints.map((endpoint, i) => ({
        id: deliveryIds[i]!,
        organisationId: event.organisationId,
        accountId: event.accountId,
        eventId,
        endpointId: endpoint.id,
        eventType: event.type,
      })),
    });
  }
  return { eventId, deliveryIds };
}
