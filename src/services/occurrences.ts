import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError, type ValidationIssue } from '../errors.ts';
import type { EventOccurrence } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { between, changedSince, paginate, type PageArgs, type PolledListArgs, type SortKey } from '../pagination.ts';
import { type Raw } from '../validation.ts';
import { addDays, instant, instantsAt, localDate, localParts, localTime, timeZone, withinRange } from '../time-zones.ts';
import { cancelPendingOrdersOfOccurrence } from './sales/hold-sweep.ts';
import { loadEvent } from './events.ts';
import { audited, auditedChange, changesBetween } from './audit.ts';
import { validate } from '../validation.ts';
import { statusOf } from '../statuses.ts';

export const createOccurrenceInput = z
  .strictObject({
    startDate: localDate,
    startTime: localTime,
    endDate: localDate.nullish(),
    endTime: localTime.nullish(),
    timezone: timeZone.nullish(),
    status: statusOf('occurrence').optional(),
    capacity: z.number().int().min(0).max(2_147_483_647).nullish(),
  })
  .superRefine((input, issue) => {
    if (input.endDate && !input.endTime) issue.addIssue({ code: 'custom', path: ['endTime'], message: 'required with endDate' });
  });

export type CreateOccurrenceInput = z.input<typeof createOccurrenceInput>;

/**
 * The one instant a wall-clock time names in `zone`. A time the clocks skip (spring forward) is
 * refused rather than silently moved; a time they repeat (fall back) is its first occurrence.
 */
function instantOf(date: string, time: string, zone: string, path: string, issues: ValidationIssue[]): Date | undefined {
  const [first] = instantsAt(date, time, zone);
  if (!first) issues.push({ path, message: `${date} ${time} does not exist in ${zone}: the clocks go forward over it.` });
  else if (!withinRange(first)) issues.push({ path, message: `${date} ${time} in ${zone} is outside years 1 to 9999 in UTC.` });
  return first;
}

/**
 * Adds a dated performance to an event. Dates and times are wall-clock times in the occurrence's
 * time zone (the event's unless `timezone` overrides it) and are stored as instants. Without
 * endDate, endTime is on the start date.
 */
export async function createOccurrence(ctx: RequestContext, eventId: string, raw: Raw<CreateOccurrenceInput>): Promise<EventOccurrence> {
  const event = await loadEvent(ctx, eventId, 'write');
  const input = validate(createOccurrenceInput, raw);
  const zone = input.timezone ?? event.timezone;
  const issues: ValidationIssue[] = [];
  const startsAt = instantOf(input.startDate, input.startTime, zone, 'startTime', issues);
  const endsAt = input.endTime ? instantOf(input.endDate ?? input.startDate, input.endTime, zone, 'endTime', issues) : null;
  if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime()) {
    issues.push({ path: input.endDate ? 'endDate' : 'endTime', message: 'The end must be after the start.' });
  }
  if (issues.length > 0) throw AppError.validation(issues);
  return audited(
    ctx,
    (tx) =>
      tx.eventOccurrence.create({
        data: {
          id: newId('occurrence'),
          organisationId: ctx.organisation!.id,
          accountId: event.accountId,
          eventId: event.id,
          startsAt: startsAt!,
          endsAt,
          timezone: zone,
          status: input.status ?? 'scheduled',
          capacity: input.capacity ?? null,
        },
      }),
    (occurrence) => ({
      action: 'event_occurrence.created',
      targetId: occurrence.id,
      accountId: occurrence.accountId,
      changes: changesBetween(null, occurrence),
    }),
  );
}

export const updateOccurrenceInput = z
  .strictObject({
    startDate: localDate,
    startTime: localTime,
    endDate: localDate.nullable(),
    endTime: localTime.nullable(),
    timezone: timeZone,
    status: statusOf('occurrence'),
    capacity: z.number().int().min(0).max(2_147_483_647).nullable(),
  })
  .partial();

export type UpdateOccurrenceInput = z.input<typeof updateOccurrenceInput>;

/**
 * Changes an occurrence: moves it (its dates and times are read in its zone as they are now, each
 * part left out kept), changes its capacity, or cancels it. A capacity applies to the next hold, as
 * the catalogue's always does (src/services/inventory.ts): tickets held or sold stay, and no hold
 * takes more than the new capacity leaves. Cancelling stops its sales and its passes' entry
 * (`OCCURRENCE_CANCELLED`) and cancels its unpaid orders at once; paid orders stay, for the
 * organisation to refund.
 */
export async function updateOccurrence(ctx: RequestContext, id: string, raw: Raw<UpdateOccurrenceInput>): Promise<EventOccurrence> {
  // Judged as adding one is: events.write on the event's account (events.read is not needed).
  const occurrence = await ctx.db.eventOccurrence.findUnique({ where: { id } });
  if (!occurrence) throw AppError.notFound('Event occurrence not found.');
  await loadEvent(ctx, occurrence.eventId, 'write');
  const input = validate(updateOccurrenceInput, raw);
  const zone = input.timezone ?? occurrence.timezone;
  const now = occurrenceTimes(occurrence);
  const issues: ValidationIssue[] = [];
  const moved = ['startDate', 'startTime', 'endDate', 'endTime', 'timezone'].some((field) => field in input);
  let times: { startsAt: Date; endsAt: Date | null } | undefined;
  if (moved) {
    const startDate = input.startDate ?? now.startDate;
    const startTime = input.startTime ?? now.startTime;
    const startsAt = instantOf(startDate, startTime, zone, 'startTime', issues);
    let endsAt: Date | null | undefined;
    if (input.endDate === undefined && input.endTime === undefined) {
      // A show moved without naming its end keeps its length.
      const length = occurrence.endsAt && occurrence.endsAt.getTime() - occurrence.startsAt.getTime();
      endsAt = startsAt && length ? new Date(startsAt.getTime() + length) : null;
    } else {
      // An end date left out keeps as many days after the start as it had (an overnight show
      // stays overnight); null puts the end on the start date, as on creation.
      const endTime = input.endTime === undefined ? now.endTime : input.endTime;
      if (input.endDate && !endTime) issues.push({ path: 'endTime', message: 'required with endDate' });
      const endDate = input.endDate === undefined ? sameDaysAfter(now, startDate) : input.endDate;
      endsAt = endTime ? instantOf(endDate ?? startDate, endTime, zone, 'endTime', issues) : null;
      if (startsAt && endsAt && endsAt.getTime() <= startsAt.getTime()) {
        issues.push({ path: input.endDate ? 'endDate' : 'endTime', message: 'The end must be after the start.' });
      }
    }
    if (endsAt && !withinRange(endsAt)) issues.push({ path: 'endTime', message: 'The end is outside years 1 to 9999 in UTC.' });
    if (startsAt) times = { startsAt, endsAt: endsAt ?? null };
  }
  if (issues.length > 0) throw AppError.validation(issues);
  const updated = await auditedChange(
    ctx,
    { table: 'event_occurrences', id, read: (tx) => tx.eventOccurrence.findUnique({ where: { id } }) },
    (tx) =>
      tx.eventOccurrence.update({
        where: { id },
        data: {
          ...times,
          ...(moved ? { timezone: zone } : {}),
          ...(input.status !== undefined ? { status: input.status } : {}),
          ...(input.capacity !== undefined ? { capacity: input.capacity } : {}),
        },
      }),
    (updated, before) => ({
      action: 'event_occurrence.updated',
      targetId: updated.id,
      accountId: updated.accountId,
      changes: changesBetween(before, updated, ['startsAt', 'endsAt', 'timezone', 'status', 'capacity']),
    }),
  );
  // Tickets held for an occurrence that was cancelled go back at once (and their orders cannot be paid).
  if (occurrence.status !== 'cancelled' && updated.status === 'cancelled') {
    await cancelPendingOrdersOfOccurrence(ctx.runtime, ctx, updated.id);
  }
  return updated;
}

/** The end date as many days after `startDate` as the occurrence's end is after its start; null without an end date. */
function sameDaysAfter(now: { startDate: string; endDate: string | null }, startDate: string): string | null {
  if (!now.endDate) return null;
  const days = Math.round((Date.parse(now.endDate) - Date.parse(now.startDate)) / 86_400_000);
  return addDays(startDate, days);
}

/** The order of an event's occurrences, by start; `Event.occurrences` pages the same order (src/services/child-lists.ts). */
export const OCCURRENCE_ORDER: SortKey = [
  ['startsAt', 'asc'],
  ['id', 'asc'],
];

const occurrenceFilters = z.object({
  status: statusOf('occurrence').nullish(),
  startsFrom: instant.nullish(),
  startsTo: instant.nullish(),
});

/**
 * The occurrences of an event in start order, cancelled ones included unless `status` says, and
 * only those starting from `startsFrom` to `startsTo` (both included) when given: an event of 300
 * performances shows its upcoming ones first with `startsFrom` now.
 */
export async function listOccurrences(ctx: RequestContext, eventId: string, args: PolledListArgs & Raw<z.input<typeof occurrenceFilters>>) {
  const { updatedSince, status, startsFrom, startsTo, ...page } = args;
  const event = await loadEvent(ctx, eventId, 'read');
  const filters = validate(occurrenceFilters, { status, startsFrom, startsTo });
  const where = {
    eventId: event.id,
    ...changedSince(updatedSince),
    ...(filters.status ? { status: filters.status } : {}),
    ...between('startsAt', filters.startsFrom, filters.startsTo),
  };
  return paginate(
    page as PageArgs,
    OCCURRENCE_ORDER,
    (keyset) => ctx.db.eventOccurrence.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.eventOccurrence.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

/** One occurrence of an event the caller may read (as listOccurrences sees it); else NOT_FOUND. */
export async function getOccurrence(ctx: RequestContext, id: string): Promise<EventOccurrence> {
  const occurrence = await ctx.db.eventOccurrence.findUnique({ where: { id } });
  const event = occurrence && (await ctx.db.event.findFirst({ where: { id: occurrence.eventId, isDeleted: false } }));
  if (!occurrence || !event || !ctx.access.allows('events', 'read', event.accountId)) {
    throw AppError.notFound('Event occurrence not found.');
  }
  return occurrence;
}

/** The wire view of an occurrence's start and end: dates and times of day in its own zone. */
export function occurrenceTimes(occurrence: Pick<EventOccurrence, 'startsAt' | 'endsAt' | 'timezone'>) {
  const start = localParts(occurrence.startsAt, occurrence.timezone);
  const end = occurrence.endsAt ? localParts(occurrence.endsAt, occurrence.timezone) : null;
  return { startDate: start.date, startTime: start.time, endDate: end?.date ?? null, endTime: end?.time ?? null };
}
