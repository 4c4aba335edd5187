import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';
import { AppError } from '../errors.ts';
import type { Prisma, WebhookDelivery, WebhookEvent } from '../generated/prisma/client.ts';
import { missingRight } from '../auth/refusal.ts';
import { NEWEST_FIRST, type Page, pageArgsOf, paginate, type RawPageArgs } from '../pagination.ts';
import { instant } from '../time-zones.ts';
import { validate, type Raw } from '../validation.ts';
import type { WebhookEventType } from '../webhooks/event-types.ts';
import { eventData, type Payload } from '../webhooks/payloads.ts';
import { webhookEventType } from './webhook-endpoints.ts';

/**
 * Source events (wev_, the Service-Event-Id): one per change webhooks announce, with its deliveries
 * (one per endpoint subscribed when it happened), read instead of received: a partner that missed
 * deliveries, or prefers to poll, lists them here. Samples sent by the endpoint test operation are
 * source events too, with their one delivery, and are listed like any other. Events are kept for
 * WEBHOOK_RETENTION (the workers prune older ones); older ones are never listed, even before they
 * are pruned. Permission: `webhooks.read` on the event's account.
 */

/**
 * An event as both surfaces show it: `data` is its payload as the request's resolved version shows
 * it (the `data` a delivery to an endpoint pinned to that version carries), `deliveries` those to
 * endpoints not deleted, oldest first.
 */
export interface WebhookEventView {
  id: string;
  type: WebhookEventType;
  createdAt: Date;
  accountId: string;
  data: Payload;
  deliveries: WebhookDelivery[];
}

export const listWebhookEventsFilters = z.object({
  type: webhookEventType.nullish(),
  createdAfter: instant.nullish(),
  createdBefore: instant.nullish(),
  deliverySuccess: z.boolean({ error: 'true or false.' }).nullish(),
});

export type ListWebhookEventsArgs = RawPageArgs & Raw<z.input<typeof listWebhookEventsFilters>>;

/** Deliveries an event shows: a deleted endpoint's leave with it, as from every delivery list. */
const SHOWN: Prisma.WebhookDeliveryWhereInput = { endpoint: { deletedAt: null } };
const NOT_SUCCEEDED: Prisma.WebhookDeliveryWhereInput = { ...SHOWN, status: { not: 'succeeded' } };

/** The oldest creation time still kept. */
const retainedSince = (ctx: RequestContext) => new Date(Date.now() - ctx.runtime.config.WEBHOOK_RETENTION);

/** Each event of `rows` with its data at the request's version and its deliveries, read in one statement. */
async function views(ctx: RequestContext, rows: WebhookEvent[]): Promise<WebhookEventView[]> {
  if (rows.length === 0) return [];
  // Bounded: one delivery per endpoint, and an account has at most WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT.
  const deliveries = await ctx.db.webhookDelivery.findMany({
    where: { ...SHOWN, eventId: { in: rows.map((row) => row.id) } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  const byEvent = new Map<string, WebhookDelivery[]>();
  for (const delivery of deliveries) {
    const list = byEvent.get(delivery.eventId);
    if (list) list.push(delivery);
    else byEvent.set(delivery.eventId, [delivery]);
  }
  return rows.map((row) => {
    const type = row.type as WebhookEventType;
    return {
      id: row.id,
      type,
      createdAt: row.createdAt,
      accountId: row.accountId,
      data: eventData({ type, payload: row.payload as Payload, version: row.version, sequence: row.sequence }, ctx.apiVersion),
      deliveries: byEvent.get(row.id) ?? [],
    };
  });
}

/**
 * The source events of the accounts where the caller may read webhooks, newest first, created
 * within WEBHOOK_RETENTION, filtered by type, by creation (strictly after `createdAfter`, at or
 * before `createdBefore`) and by how their deliveries went: `deliverySuccess` false, events with a
 * delivery not succeeded (pending or failed); true, events with deliveries, every one succeeded. An
 * event no endpoint was subscribed to has no deliveries and meets neither.
 */
export async function listWebhookEvents(ctx: RequestContext, args: ListWebhookEventsArgs): Promise<Page<WebhookEventView>> {
  const { page, filters } = pageArgsOf(args);
  const input = validate(listWebhookEventsFilters, filters);
  const readable = ctx.access.accountsFor('webhooks', 'read');
  const outcome: Prisma.WebhookEventWhereInput =
    input.deliverySuccess === false
      ? { deliveries: { some: NOT_SUCCEEDED } }
      : input.deliverySuccess === true
        ? { deliveries: { some: SHOWN, none: NOT_SUCCEEDED } }
        : {};
  const where: Prisma.WebhookEventWhereInput = {
    ...(readable === 'all' ? {} : { accountId: { in: readable } }),
    createdAt: {
      gte: retainedSince(ctx),
      ...(input.createdAfter ? { gt: input.createdAfter } : {}),
      ...(input.createdBefore ? { lte: input.createdBefore } : {}),
    },
    ...(input.type ? { type: input.type } : {}),
    ...outcome,
  };
  return paginate(
    page,
    NEWEST_FIRST,
    (keyset) => ctx.db.webhookEvent.count({ where: { AND: [where, keyset] } }),
    async ({ where: keyset, orderBy, skip, take }) =>
      views(ctx, await ctx.db.webhookEvent.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take })),
  );
}

/**
 * One source event within WEBHOOK_RETENTION. One the caller may neither read nor change webhooks
 * of, or of another organisation, is NOT_FOUND; one they may change but not read is FORBIDDEN for
 * staff, NOT_FOUND else (as a delivery).
 */
export async function getWebhookEvent(ctx: RequestContext, id: string): Promise<WebhookEventView> {
  const row = await ctx.db.webhookEvent.findFirst({ where: { id, createdAt: { gte: retainedSince(ctx) } } });
  const seen = row && (ctx.access.allows('webhooks', 'read', row.accountId) || ctx.access.allows('webhooks', 'write', row.accountId));
  if (!row || !seen) throw AppError.notFound('Webhook event not found.');
  if (!ctx.access.allows('webhooks', 'read', row.accountId)) throw missingRight(ctx);
  const [view] = await views(ctx, [row]);
  return view!;
}

/** Source events deliveries name, read in the request's batch (src/db/batch.ts). */
const retainedById = batched(async (ctx, ids: string[]) => {
  const rows = await ctx.db.webhookEvent.findMany({ where: { id: { in: ids }, createdAt: { gte: retainedSince(ctx) } } });
  return new Map((await views(ctx, rows)).map((view) => [view.id, view]));
});

/**
 * The source event a delivery names (`WebhookDelivery.event`), or null once past WEBHOOK_RETENTION;
 * who may see it is its GraphQL type's rule.
 */
export async function relatedWebhookEvent(ctx: RequestContext, id: string): Promise<WebhookEventView | null> {
  return (await retainedById(ctx, id)) ?? null;
}
