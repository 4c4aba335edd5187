import type { RequestContext } from '../../src/context.ts';
import { organisationOf } from '../../src/context.ts';
import { AppError } from '../../src/errors.ts';
import type { LiveEvent } from '../../src/live/hub.ts';
import { topicEvents } from '../../src/live/followers.ts';
import { counterEvents, type Resync } from '../../src/live/streams.ts';
import { assertMay, authorised } from '../../src/services/access.ts';
import { auditEntryVisibleTo } from '../../src/services/audit.ts';
import { related } from '../../src/services/related.ts';
import { knowCounters, salesCounters, type SalesCounters as Counters } from '../../src/services/sales-counters.ts';
import { loadDelivery, type DeliveryView } from '../../src/services/webhook-deliveries.ts';
import type { AuditEntry as AuditEntryRow, Order as OrderRow } from '../../src/generated/prisma/client.ts';
import { builder } from '../builder.ts';
import { AuditEntry } from './audit.ts';
import { EventOccurrence } from './occurrence.ts';
import { Order } from './order.ts';
import { SalesCounters } from './sales-counters.ts';
import { WebhookDelivery } from './webhook.ts';

/**
 * Live updates for admin screens: GraphQL subscriptions over server-sent events (the
 * GraphQL-over-SSE protocol, src/live/sse.ts), fed by the changes every API process and worker
 * commits (src/live/hub.ts). docs/admin-frontends.md, "Live updates", shows a client.
 */

builder.subscriptionType({
  description:
    'Live updates over server-sent events (POST /graphql with Accept: text/event-stream). Each event carries its id as the SSE `id`: reconnect with Last-Event-ID to receive what was missed within LIVE_REPLAY_WINDOW, else an event with `resync: true` first.',
});

/** A topic stream's event: a change, or the resynchronisation a replay could not avoid. */
type Change<T> = { resync: false; cursor: string; kind: string; committedAt: Date; subject: T } | Resync;

/** A change event's type: `resync` and `cursor`, and its subject as the field `name` of type `type`. */
function changeEvent<T extends object>(
  typeName: string,
  description: string,
  /** `type`: the object type of the subject (an ObjectRef of T). */
  subject: { name: string; type: object; description: string },
) {
  return builder.objectRef<Change<T>>(typeName).implement({
    description,
    fields: (t) => ({
      resync: t.boolean({
        description:
          'True when events were missed beyond the replay window (or the Last-Event-ID was unknown): reload what the screen shows, then follow the stream. The other fields are null then.',
        resolve: (change) => change.resync,
      }),
      cursor: t.string({
        description: 'The id of this event (also sent as the SSE `id`): what Last-Event-ID names to resume after it; null on a resync.',
        nullable: true,
        resolve: (change) => (change.resync ? null : change.cursor),
      }),
      committedAt: t.field({
        type: 'DateTime',
        nullable: true,
        description:
          'When the change committed (as its transaction ended, moments before the commit): what a screen shows as its time, and what a client measures its delay from; null on a resync.',
        resolve: (change) => (change.resync ? null : change.committedAt),
      }),
      [subject.name]: t.field({
        type: subject.type as never,
        nullable: true,
        description: `${subject.description}; null on a resync.`,
        resolve: (change) => (change.resync ? null : change.subject) as never,
      }),
    }),
  });
}

const OrderChangeKind = builder.enumType('OrderChangeKind', {
  description: 'What happened to an order.',
  values: {
    CREATED: { value: 'created', description: 'The order was placed (pending payment, or confirmed at once).' },
    CONFIRMED: { value: 'confirmed', description: 'It was paid: its tickets are sold.' },
    CANCELLED: { value: 'cancelled', description: 'It was cancelled, or its hold ran out unpaid.' },
    REFUNDED: { value: 'refunded', description: 'It was refunded.' },
  } as const,
});

const OrderChangedEvent = changeEvent<OrderRow>('OrderChangedEvent', 'An order of the followed account (and event) changed.', {
  name: 'order',
  type: Order,
  description: 'The order as it is when the event is sent',
});
builder.objectField(OrderChangedEvent, 'change', (t) =>
  t.field({
    type: OrderChangeKind,
    nullable: true,
    description: 'What happened; null on a resync.',
    resolve: (change) => (change.resync ? null : (change.kind as 'created')),
  }),
);

const WebhookDeliveryChangedEvent = changeEvent<DeliveryView>(
  'WebhookDeliveryChangedEvent',
  'A delivery to the followed endpoint was recorded, attempted or settled.',
  { name: 'delivery', type: WebhookDelivery, description: 'The delivery as it is when the event is sent, with its attempts' },
);

const AuditEntryAddedEvent = changeEvent<AuditEntryRow>('AuditEntryAddedEvent', 'An entry was added to the audit log.', {
  name: 'entry',
  type: AuditEntry,
  description: 'The entry',
});

interface CountersChange {
  occurrenceId: string;
  counters: Counters;
}

const SalesCountersChangedEvent = builder.objectRef<CountersChange>('SalesCountersChangedEvent').implement({
  description: "An occurrence's sales counters: when the stream starts, then as they move (at most four times a second).",
  fields: (t) => ({
    occurrenceId: t.exposeID('occurrenceId', { description: 'The occurrence (eoc_).' }),
    counters: t.field({ type: SalesCounters, description: 'Its counters now.', resolve: (change) => change.counters }),
    occurrence: t.field({
      type: EventOccurrence,
      nullable: true,
      description:
        'The occurrence as it is now, its `sales` these counters: a normalised cache (Apollo, Relay) updates the occurrence it holds. Null once it is gone.',
      resolve: async (change, _args, ctx) => {
        const row = await related(ctx, 'occurrence', change.occurrenceId);
        if (row) knowCounters(row, 'occurrence', change.counters);
        return row;
      },
    }),
  }),
});

/** The subject of a change, or null when it is gone or no longer the caller's to see. */
async function subjectOf<T>(load: () => Promise<T>): Promise<T | null> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof AppError && error.code === 'NOT_FOUND') return null;
    throw error;
  }
}

function change<T>(event: LiveEvent, subject: T | null): Change<T> | null {
  return subject === null ? null : { resync: false, cursor: String(event.id), kind: event.kind, committedAt: event.createdAt, subject };
}

/** The stream's source as GraphQL's subscribe wants it, with the payload resolved as itself. */
const itself = <T>(payload: T) => payload;

builder.subscriptionFields((t) => ({
  orderChanged: t.field({
    type: OrderChangedEvent,
    description:
      'Orders of an account as they are created, confirmed, cancelled and refunded (in commit order), optionally only those with a line of one event. Needs orders.read on the account.',
    authScopes: { $all: { organisation: true, permission: 'orders.read' } },
    args: {
      accountId: t.arg.id({ required: true, description: 'The account (acc_).' }),
      eventId: t.arg.id({ description: 'Only orders with a line of this event (evt_).' }),
    },
    subscribe: async (_root, { accountId, eventId }, ctx: RequestContext) => {
      const account = await ctx.db.account.findFirst({ where: { id: String(accountId), isDeleted: false } });
      if (!account) throw AppError.notFound('Account not found.');
      assertMay(ctx, 'orders', 'read', account.id, 'Account');
      return topicEvents<Change<OrderRow>>(ctx, {
        topic: `orders:${accountId}`,
        narrowing: eventId ? { eventId: String(eventId) } : {},
        shared: true,
        allowed: () => ctx.access.allows('orders', 'read', String(accountId)),
        // Every stream of the topic holds orders.read on the account (allowed, checked before this):
        // the order as the event left it is read once per process for all of them.
        // The same change object for every stream: what lets them share its execution (src/live/sse.ts).
        payload: (event) =>
          ctx.runtime.live.shared(
            `order ${event.id}`,
            async () =>
              change(
                event,
                await ctx.runtime.live.batched(`orders ${organisationOf(ctx).id}`, event.subjectId, (ids) =>
                  ctx.runtime.live.readsOf(organisationOf(ctx).id).order.findMany({ where: { id: { in: ids } } }),
                ),
              ),
            { keep: true },
          ),
      });
    },
    resolve: itself,
  }),
  webhookDeliveryChanged: t.field({
    type: WebhookDeliveryChangedEvent,
    description:
      "Deliveries to one endpoint as they are recorded, attempted and settled (in commit order). Needs webhooks.read on the endpoint's account, when it starts and for every event.",
    authScopes: { $all: { organisation: true, permission: 'webhooks.read' } },
    args: { endpointId: t.arg.id({ required: true, description: 'The endpoint (whe_).' }) },
    subscribe: async (_root, { endpointId }, ctx: RequestContext) => {
      const endpoint = authorised(
        ctx,
        await ctx.db.webhookEndpoint.findFirst({ where: { id: String(endpointId), deletedAt: null } }),
        'webhooks',
        'read',
        'Webhook endpoint',
      );
      // The right the stream started with, judged again for every event.
      const may = () => ctx.access.allows('webhooks', 'read', endpoint.accountId);
      return topicEvents<Change<DeliveryView>>(ctx, {
        topic: `deliveries:${endpoint.id}`,
        narrowing: {},
        shared: true,
        allowed: may,
        payload: (event) =>
          ctx.runtime.live.shared(
            `delivery ${event.id}`,
            async () =>
              change(event, await subjectOf(() => loadDelivery(ctx.runtime.live.readsOf(organisationOf(ctx).id), event.subjectId))),
            {
              keep: true,
            },
          ),
      });
    },
    resolve: itself,
  }),
  auditEntryAdded: t.field({
    type: AuditEntryAddedEvent,
    description:
      'Entries of the audit log as they are written (in commit order): of the accounts the caller may read the log of, or of one account. Needs audit.read.',
    authScopes: { $all: { organisation: true, permission: 'audit.read' } },
    args: { accountId: t.arg.id({ description: 'Only entries about this account (acc_).' }) },
    subscribe: async (_root, { accountId }, ctx: RequestContext) => {
      if (accountId) {
        // As orderChanged: an account of another organisation, or none, is not found.
        const account = await ctx.db.account.findFirst({ where: { id: String(accountId), isDeleted: false } });
        if (!account) throw AppError.notFound('Account not found.');
        assertMay(ctx, 'audit', 'read', account.id, 'Account');
      }
      return topicEvents<Change<AuditEntryRow>>(ctx, {
        topic: 'audit',
        narrowing: accountId ? { accountId: String(accountId) } : {},
        shared: false,
        allowed: () => (accountId ? ctx.access.allows('audit', 'read', String(accountId)) : ctx.access.allowsSomewhere('audit', 'read')),
        // Entries are few (people changing configuration): each stream reads what it may see itself.
        payload: async (event) => change(event, await auditEntryVisibleTo(ctx, event.subjectId)),
      });
    },
    resolve: itself,
  }),
  salesCounters: t.field({
    type: SalesCountersChangedEvent,
    description:
      "An occurrence's capacity, sold, held and available tickets: now, then as they move, at most four times a second. Needs events.read on its account.",
    authScopes: { $all: { organisation: true, permission: 'events.read' } },
    args: { occurrenceId: t.arg.id({ required: true, description: 'The occurrence (eoc_).' }) },
    subscribe: async (_root, { occurrenceId }, ctx: RequestContext) => {
      const occurrence = authorised(
        ctx,
        await ctx.db.eventOccurrence.findUnique({ where: { id: String(occurrenceId) } }),
        'events',
        'read',
        'Event occurrence',
      );
      const key = `counters ${organisationOf(ctx).id} ${occurrence.id}`;
      return counterEvents<CountersChange>(
        ctx,
        occurrence.id,
        () => ctx.access.allows('events', 'read', occurrence.accountId),
        async () => ({
          occurrenceId: occurrence.id,
          counters: await ctx.runtime.live.shared(key, () => salesCounters(ctx, 'occurrence', occurrence.id)),
        }),
      );
    },
    resolve: itself,
  }),
}));
