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
 * A stored payload put back in its view's field order (jsonb keeps keys in its own order): a payload
 * stored at the current version passes through the view; an older one takes the order the view has
 * at its version (the sample taken down to it), any key the view does not know last.
 */
export function inViewOrder(type: WebhookEventType, payload: Payload, version: string): Payload {
  const entry = WEBHOOK_TYPES[type];
  // A stored current-version payload is this view's own output: it holds every field the view reads.
  if (version === CURRENT_VERSION) return (entry.view as (stored: Payload) => Payload)(payload);
  const ordered: Payload = {};
  for (const key of Object.keys(transformDown(type, entry.sample('', new Date(0)), version)))
    if (key in payload) ordered[key] = payload[key]!;
  for (const [key, value] of Object.entries(payload)) if (!(key in ordered)) ordered[key] = value;
  return ordered;
}

/** A stored source event, as deliveries and the pull API read it. */
export interface StoredEvent {
  type: WebhookEventType;
  payload: Payload;
  /** The version the payload was built at. */
  version: string;
  /** Its place among its object's events; null for events recorded before sequences existed. */
  sequence: number | null;
}

/**
 * What a stored event shows at `to`: its payload in view order, with its `sequence` last, taken down
 * to `to` by the declared changes (versions before the one that added sequences do not show it;
 * events recorded before sequences existed have none). The one shape of `data` in deliveries and
 * in GET /v1/webhook-events. An event stored at a version older than `to` (recorded before a newer
 * version was declared) is shown as stored: what the newer versions added cannot be made up.
 */
export function eventData(event: StoredEvent, to: string): Payload {
  const stored = inViewOrder(event.type, event.payload, event.version);
  const data = event.sequence === null ? stored : { ...stored, sequence: event.sequence };
  return to > event.version ? data : transformDown(event.type, data, to, event.version);
}

/** The delivery envelope of docs/spec/service-spec.md §6, at the endpoint's pinned version. */
export function envelope(args: {
  deliveryId: string;
  type: WebhookEventType;
  createdAt: Date;
  payload: Payload;
  payloadVersion: string;
  /** The event's sequence; null or absent for an event recorded before sequences existed. */
  sequence?: number | null;
  endpointVersion: string;
}): Envelope {
  return {
    id: args.deliveryId,
    type: args.type,
    version: args.endpointVersion,
    createdAt: args.createdAt.toISOString(),
    data: eventData(
      { type: args.type, payload: args.payload, version: args.payloadVersion, sequence: args.sequence ?? null },
      args.endpointVersion,
    ),
  };
}
