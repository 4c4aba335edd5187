import type { Database } from '../../db/client.ts';
import { runPeriodically } from '../../db/periodic.ts';
import type { Logger } from '../../log.ts';
import type { Mailer } from '../../mail/mailer.ts';
import { holdSweepCancellations } from '../../metrics.ts';
import type { WebhookDispatcher } from '../../webhooks/dispatcher.ts';
import { withWebhooks } from '../../webhooks/record.ts';
import { lockOrder, move } from '../inventory.ts';
import { lineItemsOf, orderPayload } from './order-rows.ts';
import { recordAudit, type AuditContext } from '../audit.ts';

/**
 * Pending orders cancelled without a buyer asking: those whose hold ran out (every worker's sweep,
 * and a checkout short of tickets) and those of an event that stopped selling. Their tickets go
 * back on sale (order.cancelled).
 */

/** What the order moves that run outside a request use: the runtime, or a worker's part of it. */
export interface Services {
  db: Database;
  dispatcher: Pick<WebhookDispatcher, 'dispatch'>;
  logger?: Logger;
  /** Sends the customer their tickets on confirmation, when present. */
  mailer?: Mailer;
}

/**
 * Cancels pending orders whose hold ran out and puts their tickets back on sale (order.cancelled),
 * up to `limit` at a time; answers how many. Run by every worker's sweep, and by a checkout that
 * finds too few tickets left before it gives up.
 */
export async function releaseExpiredHolds(
  services: Services,
  filter: { organisationId?: string; orderId?: string } = {},
  limit = 100,
): Promise<number> {
  const now = new Date();
  const expired = await services.db.order.findMany({
    where: {
      status: 'pending',
      holdExpiresAt: { lte: now },
      ...(filter.organisationId ? { organisationId: filter.organisationId } : {}),
      ...(filter.orderId ? { id: filter.orderId } : {}),
    },
    select: { id: true, organisationId: true },
    orderBy: { holdExpiresAt: 'asc' },
    take: limit,
  });
  let released = 0;
  for (const order of expired) {
    if (await cancelPending(services, order, { expiredBefore: now })) released += 1;
  }
  if (released > 0) {
    holdSweepCancellations.inc(released);
    services.logger?.info({ released }, 'released the holds of expired pending orders');
  }
  return released;
}

/**
 * Cancels a pending order and releases its held tickets (order.cancelled), if it is still pending
 * (and, with `expiredBefore`, its hold ran out by then). Answers whether it did. With `by`, the
 * change of a person or key that stopped the order's sales, the cancellation is audited as theirs
 * in its transaction; a hold that ran out is the service's own bookkeeping, not audited.
 */
export async function cancelPending(
  services: Services,
  target: { id: string; organisationId: string },
  when: { expiredBefore?: Date; by?: AuditContext } = {},
): Promise<boolean> {
  const now = new Date();
  const { id, organisationId } = target;
  return withWebhooks(services.db, services.dispatcher, async (tx, webhooks) => {
    const moved = await tx.order.updateMany({
      where: { id, organisationId, status: 'pending', ...(when.expiredBefore ? { holdExpiresAt: { lte: when.expiredBefore } } : {}) },
      data: { status: 'cancelled', cancelledAt: now, holdExpiresAt: null },
    });
    if (moved.count !== 1) return false;
    const order = await tx.order.findFirstOrThrow({ where: { id, organisationId } });
    const lines = await lineItemsOf(tx, order);
    for (const line of lockOrder(lines)) await move(tx, organisationId, line, 'release');
    await webhooks.record({
      organisationId,
      accountId: order.accountId,
      type: 'order.cancelled',
      payload: orderPayload(order, lines),
    });
    if (when.by) {
      await recordAudit(tx, when.by, {
        action: 'order.cancelled',
        targetId: order.id,
        accountId: order.accountId,
        changes: { status: { before: 'pending', after: 'cancelled' }, cancelledAt: { before: null, after: now.toISOString() } },
      });
    }
    return true;
  });
}

/**
 * Cancels the pending orders holding tickets of an event that stopped selling (cancelled, taken
 * back to draft, completed, deleted), releasing their holds at once (order.cancelled for each),
 * each audited as a change `by` the request that stopped it. Each order is its own transaction;
 * one left behind by a crash cannot be paid (confirmOrder refuses it) and its hold expires anyway.
 */
export async function cancelPendingOrdersOfEvent(services: Services, by: AuditContext, eventId: string): Promise<number> {
  return cancelPendingOrdersWith(services, by, { occurrence: { eventId } });
}

/** The same for one occurrence that was cancelled. */
export async function cancelPendingOrdersOfOccurrence(services: Services, by: AuditContext, occurrenceId: string): Promise<number> {
  return cancelPendingOrdersWith(services, by, { occurrenceId });
}

async function cancelPendingOrdersWith(services: Services, by: AuditContext, line: Record<string, unknown>): Promise<number> {
  const organisationId = by.organisation!.id;
  const orders = await services.db.order.findMany({
    where: { organisationId, status: 'pending', lineItems: { some: line } },
    select: { id: true, organisationId: true },
  });
  let cancelled = 0;
  for (const order of orders) if (await cancelPending(services, order, { by })) cancelled += 1;
  return cancelled;
}

/** Periodic hold expiry for a worker process; stop() waits for a sweep in flight. */
export function startHoldSweep(services: Services, intervalMs = 15_000): { stop(): Promise<void> } {
  // Every worker runs the timer; one of them sweeps per period (src/db/periodic.ts).
  return runPeriodically(services.db, 'hold-sweep', intervalMs, () => releaseExpiredHolds(services), services.logger);
}
