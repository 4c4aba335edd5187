import { z } from 'zod';
import { changedSince, createdBetween, NEWEST_FIRST, type Page, type PolledListArgs, paginate } from '../pagination.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Prisma, WebhookAttempt, WebhookDelivery } from '../generated/prisma/client.ts';
import { firstWaitedFor } from '../webhooks/ordering.ts';
import { missingRight } from '../auth/refusal.ts';
import { newId } from '../ids.ts';
import { WEBHOOK_EVENT_TYPES } from '../webhooks/event-types.ts';
import { labelOf, startResendWorkflow } from '../webhooks/starts.ts';
import { closeCircuit, countOperatorAction, temporalClient } from './webhook-workflows.ts';
import { instant } from '../time-zones.ts';
import { reference, validate } from '../validation.ts';
import { STATUSES } from '../statuses.ts';
import { recordAudit } from './audit.ts';

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
  endpointId: reference.nullish(),
  status: z.enum(DELIVERY_STATUSES, { error: `One of ${DELIVERY_STATUSES.join(', ')}.` }).nullish(),
  eventType: z
    .enum(Object.keys(WEBHOOK_EVENT_TYPES) as [string, ...string[]], {
      error: `An event type: one of ${Object.keys(WEBHOOK_EVENT_TYPES).join(', ')}.`,
    })
    .nullish(),
});

/** What the graph's `webhookDeliveries` adds to /v1's filters: a creation range, both ends included. */
const adminDeliveryFilters = listWebhookDeliveriesFilters.extend({
  createdAfter: instant.nullish(),
  createdBefore: instant.nullish(),
});

export type ListWebhookDeliveriesArgs = { [K in keyof PolledListArgs | keyof z.input<typeof adminDeliveryFilters>]?: unknown };

/**
 * Deliveries on the accounts where the caller may read webhooks, newest first, filtered by
 * endpoint, status, event type and creation range. Deliveries of deleted endpoints are left out
 * with them.
 */
export async function listWebhookDeliveries(ctx: RequestContext, args: ListWebhookDeliveriesArgs): Promise<Page<DeliveryView>> {
  const { endpointId, status, eventType, createdAfter, createdBefore, updatedSince, ...pageArgs } = args;
  const input = validate(adminDeliveryFilters, { endpointId, status, eventType, createdAfter, createdBefore });
  const readable = ctx.access.accountsFor('webhooks', 'read');
  const where: Prisma.WebhookDeliveryWhereInput = {
    endpoint: { deletedAt: null },
    ...(readable === 'all' ? {} : { accountId: { in: readable } }),
    ...(input.endpointId ? { endpointId: input.endpointId } : {}),
    ...(input.status ? { status: input.status } : {}),
    ...(input.eventType ? { eventType: input.eventType } : {}),
    ...createdBetween(input.createdAfter, input.createdBefore),
    // A delivery's last change: recorded, attempted (each attempt), settled or put back for later.
    ...changedSince(updatedSince),
  };
  return paginate(
    pageArgs,
    NEWEST_FIRST,
    (keyset) => ctx.db.webhookDelivery.count({ where: { AND: [where, keyset] } }),
    async ({ where: keyset, orderBy, skip, take }) => {
      const rows = await ctx.db.webhookDelivery.findMany({
        where: { AND: [where, keyset] },
        include: withAttempts,
        orderBy,
        skip,
        take,
      });
      return rows.map(view);
    },
  );
}

/**
 * A delivery the caller may `action` (webhooks.read or webhooks.write on its account), whose endpoint
 * is not deleted. One they may neither read nor write, or of another organisation, is NOT_FOUND; one
 * they may read but not change is FORBIDDEN for staff, NOT_FOUND else.
 */
async function deliveryFor(ctx: RequestContext, id: string, action: 'read' | 'write') {
  const row = await ctx.db.webhookDelivery.findFirst({
    where: { id, endpoint: { deletedAt: null } },
    include: { ...withAttempts, endpoint: true },
  });
  const mayRead = row && (ctx.access.allows('webhooks', 'read', row.accountId) || ctx.access.allows('webhooks', 'write', row.accountId));
  if (!row || !mayRead) throw AppError.notFound('Webhook delivery not found.');
  if (!ctx.access.allows('webhooks', action, row.accountId)) throw missingRight(ctx);
  return row;
}

export async function getWebhookDelivery(ctx: RequestContext, id: string): Promise<DeliveryView> {
  const { endpoint: _endpoint, ...row } = await deliveryFor(ctx, id, 'read');
  return view(row);
}

/**
 * Sends the delivery again now, whatever its status, as a manual attempt (trigger manual, the same
 * Service-Event-Id and Service-Delivery-Id, a fresh signature), in the background: the attempt
 * appears among the delivery's attempts once made (later when its endpoint is busy). A success
 * settles the delivery as succeeded; a failure changes nothing else and is not retried. A disabled
 * endpoint is refused (CONFLICT). An open circuit lets this attempt through (half-open). At most
 * RESENDS_PER_ENDPOINT_PER_MINUTE per endpoint and RESENDS_PER_ORGANISATION_PER_MINUTE per
 * organisation (RATE_LIMITED with Retry-After beyond).
 */
export async function resendWebhookDelivery(ctx: RequestContext, id: string): Promise<DeliveryView> {
  const { endpoint, ...row } = await deliveryFor(ctx, id, 'write');
  if (!endpoint.enabled) throw new AppError('CONFLICT', 'The endpoint is disabled; enable it to resend its deliveries.');
  // An endpoint that orders per object gets an object's deliveries in sequence order: a resend may
  // not overtake an earlier delivery of the same object that is still on its way.
  const earlier = await firstWaitedFor(ctx.db, row.id);
  if (earlier) {
    throw new AppError(
      'CONFLICT',
      `The endpoint orders deliveries per object and an earlier delivery of this object (${earlier}) is still pending; this one goes after it.`,
      { pendingDeliveryId: earlier },
    );
  }
  await countOperatorAction(ctx, 'resend', endpoint);
  const client = await temporalClient(ctx);
  // The circuit and the entry in one transaction, committed before the workflow starts: its attempt
  // must find the circuit closed. The entry records that the operator asked for the attempt; a
  // start that fails then is answered UNAVAILABLE, and the next attempt finds the circuit closed.
  await ctx.db.$transaction(async (tx) => {
    await closeCircuit(tx, endpoint.id);
    await recordAudit(tx, ctx, { action: 'webhook_delivery.resent', targetId: row.id, accountId: row.accountId });
  });
  await startResendWorkflow(
    client,
    ctx.runtime.logger,
    ctx.runtime.config.TEMPORAL_TASK_QUEUE,
    newId('webhookResend'),
    labelOf(row),
    newId('webhookAttempt'),
  );
  return view(row);
}
