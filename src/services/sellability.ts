import type { STATUSES } from '../statuses.ts';

/**
 * What may be sold, in one home: which events a channel lists, which statuses take new holds and
 * which let held tickets be paid, and whether a ticket type's sales are open now. Listings, carts,
 * checkout and confirmation all ask here.
 */

type EventStatus = (typeof STATUSES)['event'][number];

/** Statuses in which an event is listed and new tickets may be held (the dates and windows still apply). */
export const LISTED_EVENT_STATUSES: readonly EventStatus[] = ['published', 'on_sale'];

/**
 * Statuses under which tickets already held can still be paid for: selling out (by the very
 * holds being paid) must not stop their buyers.
 */
export const PAYABLE_EVENT_STATUSES: readonly EventStatus[] = ['published', 'on_sale', 'sold_out'];

interface SaleDates {
  onSaleDate: Date | null;
  offSaleDate: Date | null;
}
interface TypeWindow {
  salesStartAt: Date | null;
  salesEndAt: Date | null;
}

/**
 * Why tickets of `type` for `event` cannot be sold at `now` (the event's on/off-sale dates, then the
 * ticket type's sales window), naming the field a cart line would be refused at; null when they can.
 */
export function salesClosed(
  event: SaleDates,
  type: TypeWindow,
  now: Date,
): { field: 'occurrenceId' | 'ticketTypeId'; message: string } | null {
  if (event.onSaleDate && event.onSaleDate > now)
    return { field: 'occurrenceId', message: `Sales for this event open at ${event.onSaleDate.toISOString()}.` };
  if (event.offSaleDate && event.offSaleDate <= now) return { field: 'occurrenceId', message: 'Sales for this event have closed.' };
  if (type.salesStartAt && type.salesStartAt > now)
    return { field: 'ticketTypeId', message: `This ticket type goes on sale at ${type.salesStartAt.toISOString()}.` };
  if (type.salesEndAt && type.salesEndAt <= now) return { field: 'ticketTypeId', message: 'Sales of this ticket type have ended.' };
  return null;
}
