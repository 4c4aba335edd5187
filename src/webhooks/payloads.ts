import { CURRENT_VERSION, transformDown as transformResource } from '../versions.ts';
import { WEBHOOK_TYPES, type WebhookEventType } from './event-types.ts';
import type { Payload } from './views.ts';

export {
  views,
  type CustomerView,
  type EventView,
  type OrderView,
  type Payload,
  type TicketRedeemedView,
  type TicketsIssuedView,
} from './views.ts';

/**
 * Webhook payloads: built from their type's view at the current version (src/webhooks/views.ts),
 * then transformed down one dated version at a time to the version an endpoint pinned, by the
 * changes src/versions.ts declares for the resource the type carries (src/webhooks/event-types.ts).
 */

/**
 * Transforms `data` (built at `from`) down to `to`, one version at a time, by the changes declared
 * in src/versions.ts: the same declarations shape `/v1` and `/live` responses.
 */
export function transformDown(type: WebhookEventType, data: Payload, to: string, from = CURRENT_VERSION): Payload {
  return transformResource(WEBHOOK_TYPES[type].resource, data, to, from);
}

export interface Envelope {
  id: string;
  type: WebhookEventType;
  version: string;
  createdAt: string;
  data: Payload;
}

/**
 * A stored payload put back in its view's field order (jsonb keeps keys in its own order). Only
 * payloads stored at the current version pass through the view; older ones are left as stored.
 */
export function inViewOrder(type: WebhookEventType, payload: Payload, version: string): Payload {
  // A stored current-version payload is this view's own output: it holds every field the view reads.
  const view = WEBHOOK_TYPES[type].view as (stored: Payload) => Payload;
  return version === CURRENT_VERSION ? view(payload) : payload;
}

/** The delivery envelope of docs/spec/service-spec.md §6, at the endpoint's pinned version. */
export function envelope(args: {
  deliveryId: string;
  type: WebhookEventType;
  createdAt: Date;
  payload: Payload;
  payloadVersion: string;
  endpointVersion: string;
}): Envelope {
  return {
    id: args.deliveryId,
    type: args.type,
    version: args.endpointVersion,
    createdAt: args.createdAt.toISOString(),
    data: transformDown(args.type, inViewOrder(args.type, args.payload, args.payloadVersion), args.endpointVersion, args.payloadVersion),
  };
}
