import { z } from 'zod';
import { paginate, type Page, type PageArgs } from '../pagination.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Prisma, WebhookAttempt, WebhookDelivery } from '../generated/prisma/client.ts';
import { WEBHOOK_EVENT_TYPES } from '../webhooks/event-types.ts';
import { validate } from '../validation.ts';
import { STATUSES } from '../statuses.ts';

/**
 * Webhook deliveries (whd_): one source event to one endpoint, with its status, next attempt and
 * every attempt made (status code, first 4 KiB of the body, duration, error), oldest attempt first.
 */

export const DELIVERY_STATUSES = STATUSES.delivery;

/** A delivery as both surfaces show it; the attempts carry the account for their authorisation. */
export type DeliveryView = WebhookDelivery & { attempts: AttemptView[] };
export type AttemptView = WebhookAttempt & { accountId: string };

const withAttempts = { attempts: { orderBy: { attemptNumber: 'asc' } } } satisfies Prisma.WebhookDeliveryInclude;

type DeliveryRow = Prisma.WebhookDeliveryGetPayload<{ include: typeof withAttempts }>;

function view(row: DeliveryRow): DeliveryView {
  return { ...row, attempts: row.attempts.map((attempt) => ({ ...attempt, accountId: row.accountId })) };
}

type Db = Pick<RequestContext['db'], 'webhookDelivery'>;

/** One delivery by id, with its attempts (no permission check: callers have made theirs). */
export async function loadDelivery(db: Db, id: string): Promise<DeliveryView> {
  const row = await db.webhookDelivery.findFirst({ where: { id }, include: withAttempts });
  if (!row) throw AppError.notFound('Webhook delivery not found.');
  return view(row);
}

export const listWebhookDeliveriesFilters = z.object({
  endpointId: z.string().min(1).max(100).nullish(),
  status: z.enum(DELIVERY_STATUSES, { error: `One of ${DELIVERY_STATUSES.join(', ')}.` }).nullish(),
  eventType: z
    .enum(Object.keys(WEBHOOK_EVENT_TYPES) as [string, ...string[]], {
      error: `An event type: one of ${Object.keys(WEBHOOK_EVENT_TYPES).join(', ')}.`,
    })
    .nullish(),
});

export type ListWebhookDeliveriesArgs = { [K in keyof PageArgs | keyof z.input<typeof listWebhookDeliveriesFilters>]?: unknown };

/**
 * Deliveries on the accounts where the caller may read webhooks, newest first, filtered by
 * endpoint, status and event type. Deliveries of deleted endpoints are left out with them.
 */
export async function listWebhookDeliveries(ctx: RequestContext, args: ListWebhookDeliveriesArgs): Promise<Page<DeliveryView>> {
  const { endpointId, status, eventType, ...pageArgs } = args;
  const input = validate(listWebhookDeliveriesFilters, { endpointId, status, eventType });
  const readable = ctx.access.accountsFor('webhooks', 'read');
  const where: Prisma.WebhookDeliveryWhereInput = {
    endpoint: { deletedAt: null },
    ...(readable === 'all' ? {} : { accountId: { in: readable } }),
    ...(input.endpointId ? { endpointId: input.endpointId } : {}),
    ...(input.status ? { status: input.status } : {}),
    ...(input.eventType ? { eventType: input.eventType } : {}),
  };
  return paginate(
    pageArgs,
    () => ctx.db.webhookDelivery.count({ where }),
    async ({ skip, take }) => {
      const rows = await ctx.db.webhookDelivery.findMany({
        where,
        include: withAttempts,
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        skip,
        take,
      });
      return rows.map(view);
    },
  );
}
