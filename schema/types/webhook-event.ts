import { getWebhookEvent, listWebhookEvents, relatedWebhookEvent, type WebhookEventView } from '../../src/services/webhook-events.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { pageArgsFor, pagedConnection } from '../pagination.ts';
import { accountRelation } from './account.ts';
import { WebhookDelivery } from './webhook.ts';

const READ = { $all: { organisation: true, permission: 'webhooks.read' } } as const;

export const WebhookEvent = builder.objectRef<WebhookEventView>('WebhookEvent').implement({
  interfaces: [Node],
  description:
    'A source event (wev_, the Service-Event-Id): one change webhooks announce, with its deliveries to the endpoints subscribed when it happened. Kept for WEBHOOK_RETENTION (30 days by default).',
  authScopes: (event, ctx) => ctx.access.allows('webhooks', 'read', event.accountId),
  fields: (t) => ({
    type: t.exposeString('type', { description: 'Event type, such as order.confirmed (see webhookEventTypes).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the change was recorded.' }),
    accountId: t.exposeID('accountId', { description: 'The account the change happened on.' }),
    account: t.field(accountRelation()),
    data: t.field({
      type: 'JSONObject',
      description:
        "The payload, as the request's resolved API version shows it (Service-Version header, else the organisation's apiVersion, else the current version): the `data` a delivery to an endpoint pinned to that version carries, with `sequence` from the version that added it on.",
      resolve: (event) => event.data,
    }),
    deliveries: t.field({
      type: [WebhookDelivery],
      description:
        'Its deliveries, one per endpoint subscribed when it happened (a test sample: the endpoint tested), oldest first; those of deleted endpoints leave with them.',
      resolve: (event) => event.deliveries,
    }),
  }),
});

builder.objectField(WebhookDelivery, 'event', (t) =>
  t.field({
    type: WebhookEvent,
    nullable: true,
    description:
      'The source event it sends, with its payload as your API version shows it; null once past WEBHOOK_RETENTION (also null, with an error, where you may not read webhooks).',
    resolve: (delivery, _args, ctx) => relatedWebhookEvent(ctx, delivery.eventId),
  }),
);

const WebhookEventConnection = pagedConnection(WebhookEvent, 'WebhookEventConnection', 'webhook events');

builder.queryFields((t) => ({
  webhookEvents: t.field({
    type: WebhookEventConnection,
    nullable: true,
    description:
      'Source events on the accounts you may read webhooks on, newest first, created within WEBHOOK_RETENTION, with their deliveries (GET /v1/webhook-events): what webhooks announced, read instead of received. Endpoint test samples are listed too.',
    authScopes: READ,
    args: {
      ...t.arg.connectionArgs(),
      ...pageArgsFor(t),
      type: t.arg.string({ description: 'Only events of this type (see webhookEventTypes).' }),
      createdAfter: t.arg({ type: 'DateTime', description: 'Only events created strictly after this instant.' }),
      createdBefore: t.arg({ type: 'DateTime', description: 'Only events created at or before this instant.' }),
      deliverySuccess: t.arg.boolean({
        description:
          'false: only events with a delivery not succeeded (pending or failed). true: only events with deliveries, every one succeeded. Events no endpoint received meet neither.',
      }),
    },
    resolve: (_root, args, ctx) => listWebhookEvents(ctx, args),
  }),
  webhookEvent: t.field({
    type: WebhookEvent,
    nullable: true,
    description: 'One source event with its deliveries, within WEBHOOK_RETENTION.',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Event id (wev_).' }) },
    resolve: (_root, { id }, ctx) => getWebhookEvent(ctx, id),
  }),
}));
