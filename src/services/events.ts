import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Event, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { views } from '../webhooks/payloads.ts';
import { recordWebhookEvent } from '../webhooks/record.ts';
import { paginate, type PageArgs } from '../pagination.ts';
import { validate } from '../validation.ts';
import { owningAccount } from './accounts.ts';
import { assertMay, authorised, readableAccounts } from './access.ts';
import type { Raw } from '../validation.ts';
import type { RawPageArgs } from '../pagination.ts';
import { addDays, instant, localDate, startOfLocalDay, timeZone } from '../time-zones.ts';
import { cancelPendingOrdersOfEvent } from './orders.ts';
import { PAYABLE_EVENT_STATUSES } from './sellability.ts';
import { STATUSES, statusOf } from '../statuses.ts';

// ---------------------------------------------------------------------------------------------
// Events

export type EventStatus = (typeof STATUSES)['event'][number];

const status = statusOf('event');

/** 1 to 50 characters each, at most 50 after removing duplicates (the first spelling is kept). */
const tags = z
  .array(z.string().trim().min(1, 'a tag has 1 to 50 characters').max(50, 'a tag has 1 to 50 characters'))
  .max(200, 'at most 50 tags')
  .transform((list) => [...new Set(list)])
  .refine((list) => list.length <= 50, 'at most 50 tags');

const eventFields = {
  name: z.string().trim().min(1).max(255),
  description: z.string().max(5000).nullish(),
  status: status.optional(),
  venueId: z.string().min(1).max(100).nullish(),
  timezone: timeZone.nullish(),
  onSaleDate: instant.nullish(),
  offSaleDate: instant.nullish(),
  tags: tags.optional(),
};

export const createEventInput = z.strictObject({ accountId: z.string().min(1).max(100), ...eventFields });
export const updateEventInput = z.strictObject(eventFields).partial();

export type CreateEventInput = z.input<typeof createEventInput>;
export type UpdateEventInput = z.input<typeof updateEventInput>;

function checkSaleWindow(onSaleDate: Date | null | undefined, offSaleDate: Date | null | undefined): void {
  if (onSaleDate && offSaleDate && onSaleDate.getTime() >= offSaleDate.getTime()) {
    throw AppError.validation([{ path: 'offSaleDate', message: 'must be after onSaleDate' }]);
  }
}

type VenueDb = Pick<RequestContext['db'], 'venue'>;

/** A venue an event of `accountId` may take place at: not deleted, same account (else 400 venueId). */
async function venueOf(db: VenueDb, venueId: string, accountId: string) {
  const venue = await db.venue.findFirst({ where: { id: venueId, accountId, isDeleted: false }, select: { id: true, timezone: true } });
  if (!venue) throw AppError.validation([{ path: 'venueId', message: "No such venue on the event's account." }]);
  return venue;
}

/**
 * Creates an event. Runs in one transaction so that the webhook source event announcing it
 * (event.created) commits or rolls back with it. The time zone defaults to the venue's.
 */
export async function createEvent(ctx: RequestContext, raw: Raw<CreateEventInput>): Promise<Event> {
  const input = validate(createEventInput, raw);
  checkSaleWindow(input.onSaleDate, input.offSaleDate);
  const { event, deliveryIds } = await ctx.db.$transaction(async (tx) => {
    const accountId = await owningAccount(ctx, 'events', input.accountId, tx);
    const venue = input.venueId ? await venueOf(tx, input.venueId, accountId) : null;
    const timezone = input.timezone ?? venue?.timezone;
    if (!timezone) {
      throw AppError.validation([{ path: 'timezone', message: 'Required unless the venue has a time zone.' }]);
    }
    const event = await tx.event.create({
      data: {
        id: newId('event'),
        organisationId: ctx.organisation!.id,
        accountId,
        name: input.name,
        description: input.description ?? null,
        status: input.status ?? 'draft',
        venueId: venue?.id ?? null,
        timezone,
        onSaleDate: input.onSaleDate ?? null,
        offSaleDate: input.offSaleDate ?? null,
        tags: input.tags ?? [],
        createdBy: ctx.principal?.kind === 'staff' ? ctx.principal.userId : null,
      },
    });
    // The source event and its deliveries commit (or roll back) with the event itself.
    const { deliveryIds } = await recordWebhookEvent(tx, {
      organisationId: event.organisationId,
      accountId: event.accountId,
      type: 'event.created',
      payload: views.event(event),
    });
    return { event, deliveryIds };
  });
  // After the commit, so the delivery workflows find the rows they are started for.
  ctx.runtime.dispatcher.dispatch(deliveryIds);
  return event;
}

/** A non-deleted event the caller may `action` (read: GET; write: changes). */
export async function loadEvent(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<Event> {
  return authorised(ctx, await ctx.db.event.findFirst({ where: { id, isDeleted: false } }), 'events', action, 'Event');
}

export function getEvent(ctx: RequestContext, id: string): Promise<Event> {
  return loadEvent(ctx, id, 'read');
}

export async function updateEvent(ctx: RequestContext, id: string, raw: Raw<UpdateEventInput>): Promise<Event> {
  const event = await loadEvent(ctx, id, 'write');
  const input = validate(updateEventInput, raw);
  if (input.timezone === null) throw AppError.validation([{ path: 'timezone', message: 'An event always has a time zone.' }]);
  checkSaleWindow(
    input.onSaleDate === undefined ? event.onSaleDate : input.onSaleDate,
    input.offSaleDate === undefined ? event.offSaleDate : input.offSaleDate,
  );
  if (input.venueId) await venueOf(ctx.db, input.venueId, event.accountId);
  const data: Prisma.EventUncheckedUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  if (input.description !== undefined) data.description = input.description;
  if (input.status !== undefined) data.status = input.status;
  if (input.venueId !== undefined) data.venueId = input.venueId;
  if (input.timezone) data.timezone = input.timezone;
  if (input.onSaleDate !== undefined) data.onSaleDate = input.onSaleDate;
  if (input.offSaleDate !== undefined) data.offSaleDate = input.offSaleDate;
  if (input.tags !== undefined) data.tags = input.tags;
  const updated = await ctx.db.event.update({ where: { id }, data });
  // Tickets held for an event that stopped selling go back at once (and their orders cannot be paid).
  if (input.status !== undefined && !PAYABLE_EVENT_STATUSES.includes(input.status)) {
    await cancelPendingOrdersOfEvent(ctx.runtime, event.organisationId, id);
  }
  return updated;
}

/** Marks the event deleted: it leaves every list and answers 404 from then on; its pending orders are cancelled. */
export async function deleteEvent(ctx: RequestContext, id: string): Promise<{ success: boolean; id: string }> {
  const event = await loadEvent(ctx, id, 'write');
  await ctx.db.event.update({ where: { id }, data: { isDeleted: true } });
  await cancelPendingOrdersOfEvent(ctx.runtime, event.organisationId, id);
  return { success: true, id };
}

/** A bound of the date filter: a whole local day (YYYY-MM-DD) or an exact instant. */
const rangeBound = z.union([localDate, instant], {
  error: 'a date (YYYY-MM-DD) or an ISO 8601 date and time with Z or an offset',
});

export const listEventsFilters = z
  .object({
    status: status.nullish(),
    accountId: z.string().min(1).max(100).nullish(),
    q: z.string().trim().max(200).nullish(),
    from: rangeBound.nullish(),
    to: rangeBound.nullish(),
  })
  .superRefine(({ from, to }, issue) => {
    const comparable =
      (typeof from === 'string' && typeof to === 'string') || (from instanceof Date && to instanceof Date);
    if (comparable && from! > to!) issue.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
  });

export type ListEventsArgs = RawPageArgs & Raw<z.input<typeof listEventsFilters>>;

type OccurrenceWhere = Prisma.EventOccurrenceWhereInput;

/**
 * The occurrence condition of the from/to filter. A date bound means a whole calendar day in the
 * occurrence's own time zone (`to` includes its day), so "events on 2026-07-04" finds a show at
 * 21:00 in New York although that is already 5 July in UTC; an instant bound is exact. Only
 * scheduled (not cancelled) occurrences count. Date bounds turn into one instant range per time
 * zone in use, which keeps the whole filter a single indexed query.
 */
async function occurrenceRange(
  ctx: RequestContext,
  from: string | Date | null | undefined,
  to: string | Date | null | undefined,
  accountId: Prisma.EventOccurrenceWhereInput['accountId'],
): Promise<OccurrenceWhere | undefined> {
  if (from == null && to == null) return undefined;
  const startsAt = (zone: string | null): Prisma.DateTimeFilter => ({
    ...(from instanceof Date ? { gte: from } : from ? { gte: startOfLocalDay(from, zone!) } : {}),
    ...(to instanceof Date ? { lte: to } : to ? { lt: startOfLocalDay(addDays(to, 1), zone!) } : {}),
  });
  if (typeof from !== 'string' && typeof to !== 'string') {
    return { status: 'scheduled', startsAt: startsAt(null) };
  }
  const zones = await ctx.db.eventOccurrence.groupBy({
    by: ['timezone'],
    where: { status: 'scheduled', ...(accountId === undefined ? {} : { accountId }) },
  });
  return { status: 'scheduled', OR: zones.map(({ timezone }) => ({ timezone, startsAt: startsAt(timezone) })) };
}

/**
 * Events on the accounts the caller may read, newest first, filtered by status, account, text
 * (case-insensitive, in name or description) and the from/to occurrence range.
 */
export async function listEvents(ctx: RequestContext, args: ListEventsArgs) {
  const { page, limit, first, after, last, before, ...rawFilters } = args;
  const filters = validate(listEventsFilters, rawFilters);
  const accountId = readableAccounts(ctx, 'events', filters.accountId);
  const occurrences = await occurrenceRange(ctx, filters.from, filters.to, accountId);
  // Prisma passes `contains` to ILIKE as is: escape its wildcards so `%` and `_` are literal.
  const text = filters.q ? filters.q.replace(/[\\%_]/g, (c) => `\\${c}`) : null;
  const where: Prisma.EventWhereInput = {
    isDeleted: false,
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.status ? { status: filters.status } : {}),
    ...(text
      ? {
          OR: [
            { name: { contains: text, mode: 'insensitive' } },
            { description: { contains: text, mode: 'insensitive' } },
          ],
        }
      : {}),
    ...(occurrences ? { occurrences: { some: occurrences } } : {}),
  };
  return paginate(
    { page, limit, first, after, last, before } as PageArgs,
    () => ctx.db.event.count({ where }),
    ({ skip, take }) => ctx.db.event.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
  );
}

// ---------------------------------------------------------------------------------------------
// occurrenceCount, ticketCount, productCount

export interface EventCounts {
  occurrenceCount: number;
  ticketCount: number;
  productCount: number;
}

interface CountBatch {
  ids: Set<string>;
  result: Promise<Map<string, EventCounts>>;
}

const pendingBatches = new WeakMap<RequestContext, CountBatch>();

/**
 * The counts of one event, batched: every event resolved while a request's batch is open (a page
 * of a list, in practice) is counted together with one grouped query per count. Counts are always
 * read fresh (not cached past the batch), so a mutation earlier in the same request shows.
 */
export function eventCounts(ctx: RequestContext, eventId: string): Promise<EventCounts> {
  let batch = pendingBatches.get(ctx);
  if (!batch) {
    const ids = new Set<string>();
    const created: CountBatch = {
      ids,
      result: new Promise((resolve) => setImmediate(resolve)).then(() => {
        pendingBatches.delete(ctx);
        return countEvents(ctx, [...ids]);
      }),
    };
    batch = created;
    pendingBatches.set(ctx, batch);
  }
  batch.ids.add(eventId);
  return batch.result.then((counts) => counts.get(eventId) ?? { occurrenceCount: 0, ticketCount: 0, productCount: 0 });
}

/**
 * Non-cancelled occurrences and non-deleted ticket types per event. productCount (the spec's count of
 * things sold beside admission) is 0: products are not part of the service yet.
 */
async function countEvents(ctx: RequestContext, eventIds: string[]): Promise<Map<string, EventCounts>> {
  const [occurrences, ticketTypes] = await Promise.all([
    ctx.db.eventOccurrence.groupBy({ by: ['eventId'], where: { eventId: { in: eventIds }, status: { not: 'cancelled' } }, _count: { _all: true } }),
    ctx.db.ticketType.groupBy({ by: ['eventId'], where: { eventId: { in: eventIds }, isDeleted: false }, _count: { _all: true } }),
  ]);
  const counts = new Map(eventIds.map((id) => [id, { occurrenceCount: 0, ticketCount: 0, productCount: 0 }]));
  for (const row of occurrences) counts.get(row.eventId)!.occurrenceCount = row._count._all;
  for (const row of ticketTypes) counts.get(row.eventId)!.ticketCount = row._count._all;
  return counts;
}
