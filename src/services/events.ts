import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';
import { likeLiteral } from '../db/text-search.ts';
import { AppError } from '../errors.ts';
import type { Event, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { views } from '../webhooks/payloads.ts';
import { EVENT } from '../resources/event.ts';
import { withWebhooks } from '../webhooks/record.ts';
import type { Statement } from '../db/sql.ts';
import {
  cursorOf,
  cursorPage,
  pageArgsOf,
  pageRequest,
  pollFilter,
  sortDirection,
  toPage,
  type ListOrder,
  type Page,
  type PageRequest,
  type RawPageArgs,
} from '../pagination.ts';
import { reference, validate, type Raw } from '../validation.ts';
import { owningAccount } from './accounts.ts';
import { authorised, readableAccounts } from './access.ts';
import { instant, localDate } from '../time-zones.ts';
import { cancelPendingOrdersOfEvent } from './sales/hold-sweep.ts';
import { PAYABLE_EVENT_STATUSES } from './sellability.ts';
import { STATUSES, statusOf } from '../statuses.ts';
import { audited, changesBetween, recordAudit, auditedChange } from './audit.ts';

// ---------------------------------------------------------------------------------------------
// Events

export type EventStatus = (typeof STATUSES)['event'][number];

export const createEventInput = z.strictObject({ accountId: reference, ...EVENT.writable() });
export const updateEventInput = z.strictObject(EVENT.writable()).partial();

export type CreateEventInput = z.input<typeof createEventInput>;
export type UpdateEventInput = z.input<typeof updateEventInput>;

function checkSaleWindow(onSaleDate: Date | null | undefined, offSaleDate: Date | null | undefined): void {
  if (onSaleDate && offSaleDate && onSaleDate.getTime() >= offSaleDate.getTime()) {
    throw AppError.validation([{ path: 'offSaleDate', message: 'must be after onSaleDate' }]);
  }
}

type VenueDb = Pick<RequestContext['db'], 'venue'>;

/** A venue an event of `accountId` may take place at: not deleted, same account (else 404 naming venueId). */
async function venueOf(db: VenueDb, venueId: string, accountId: string) {
  const venue = await db.venue.findFirst({ where: { id: venueId, accountId, isDeleted: false }, select: { id: true, timezone: true } });
  if (!venue) throw AppError.unknownReferences([{ path: 'venueId', message: "No such venue on the event's account." }]);
  return venue;
}

/**
 * Creates an event. Runs in one transaction so that the webhook source event announcing it
 * (event.created) commits or rolls back with it. The time zone defaults to the venue's.
 */
export async function createEvent(ctx: RequestContext, raw: Raw<CreateEventInput>): Promise<Event> {
  const input = validate(createEventInput, raw);
  checkSaleWindow(input.onSaleDate, input.offSaleDate);
  return withWebhooks(ctx.db, ctx.runtime.dispatcher, async (tx, webhooks) => {
    const accountId = await owningAccount(ctx, 'events', input.accountId, tx);
    const venue = input.venueId ? await venueOf(tx, input.venueId, accountId) : null;
    const timezone = input.timezone ?? venue?.timezone;
    if (!timezone) {
      throw AppError.validation([{ path: 'timezone', message: 'Required unless the venue has a time zone.' }]);
    }
    const event = await tx.event.create({
      data: {
        ...(EVENT.created(input) as Prisma.EventUncheckedCreateInput),
        id: newId('event'),
        organisationId: ctx.organisation!.id,
        accountId,
        status: input.status ?? 'draft',
        venueId: venue?.id ?? null,
        timezone,
        createdBy: ctx.principal?.kind === 'staff' ? ctx.principal.userId : null,
      },
    });
    // The source event and its deliveries commit (or roll back) with the event itself.
    await webhooks.record({
      organisationId: event.organisationId,
      accountId: event.accountId,
      type: 'event.created',
      payload: views.event(event),
    });
    await recordAudit(tx, ctx, {
      action: 'event.created',
      targetId: event.id,
      accountId: event.accountId,
      changes: changesBetween(null, event),
    });
    return event;
  });
}

/** A non-deleted event the caller may `action` (read: GET; write: changes). */
export async function loadEvent(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<Event> {
  return authorised(ctx, await ctx.db.event.findFirst({ where: { id, isDeleted: false } }), 'events', action, 'Event');
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
  const data = EVENT.changes(input) as Prisma.EventUncheckedUpdateInput;
  const updated = await auditedChange(
    ctx,
    { table: 'events', id, read: (tx) => tx.event.findFirst({ where: { id, isDeleted: false } }) },
    (tx) => tx.event.update({ where: { id }, data }),
    (after, before) => ({ action: 'event.updated', targetId: id, accountId: event.accountId, changes: changesBetween(before, after) }),
  );
  // Tickets held for an event that stopped selling go back at once (and their orders cannot be paid).
  if (input.status !== undefined && !PAYABLE_EVENT_STATUSES.includes(input.status)) {
    await cancelPendingOrdersOfEvent(ctx.runtime, ctx, id);
  }
  return updated;
}

/** Marks the event deleted: it leaves every list and answers 404 from then on; its pending orders are cancelled. */
export async function deleteEvent(ctx: RequestContext, id: string): Promise<{ success: boolean; id: string }> {
  const event = await loadEvent(ctx, id, 'write');
  await audited(
    ctx,
    (tx) => tx.event.update({ where: { id }, data: { isDeleted: true } }),
    () => ({ action: 'event.deleted', targetId: id, accountId: event.accountId, changes: { isDeleted: { before: false, after: true } } }),
  );
  await cancelPendingOrdersOfEvent(ctx.runtime, ctx, id);
  return { success: true, id };
}

/** A bound of the date filter: a whole local day (YYYY-MM-DD) or an exact instant. */
const rangeBound = z.union([localDate, instant], {
  error: 'a date (YYYY-MM-DD) or an ISO 8601 date and time with Z or an offset',
});

export const listEventsFilters = z
  .object({
    status: statusOf('event').nullish(),
    accountId: reference.nullish(),
    q: z.string().trim().max(200).nullish(),
    from: rangeBound.nullish(),
    to: rangeBound.nullish(),
  })
  .superRefine(({ from, to }, issue) => {
    const comparable = (typeof from === 'string' && typeof to === 'string') || (from instanceof Date && to instanceof Date);
    if (comparable && from > to) issue.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
  });

/**
 * How the graph's `events(orderBy:)` sorts: by creation (the list's own order, newest first), by
 * name, or by the start of the first scheduled occurrence (events without one last, either way).
 * Each field has its natural direction when none is given.
 */
export const EVENT_ORDER_FIELDS = ['created_at', 'name', 'start_date'] as const;
export const eventOrderInput = z.strictObject({ field: z.enum(EVENT_ORDER_FIELDS), direction: sortDirection.nullish() });

/**
 * What the graph adds to GET /v1/events' filters: `updatedSince`, `orderBy`, a venue, and the
 * start range typed by kind (an instant or a local day) where /v1's `from`/`to` take either in one
 * string.
 */
const adminEventArgs = pollFilter
  .extend({
    orderBy: eventOrderInput.nullish(),
    venueId: reference.nullish(),
    startsFrom: instant.nullish(),
    startsTo: instant.nullish(),
    startDateFrom: localDate.nullish(),
    startDateTo: localDate.nullish(),
  })
  .superRefine(({ startsFrom, startsTo, startDateFrom, startDateTo }, issue) => {
    if (startsFrom && startDateFrom)
      issue.addIssue({ code: 'custom', path: ['startDateFrom'], message: 'give startsFrom or startDateFrom, not both' });
    if (startsTo && startDateTo)
      issue.addIssue({ code: 'custom', path: ['startDateTo'], message: 'give startsTo or startDateTo, not both' });
    if (startsFrom && startsTo && startsFrom > startsTo)
      issue.addIssue({ code: 'custom', path: ['startsTo'], message: 'must not be before startsFrom' });
    if (startDateFrom && startDateTo && startDateFrom > startDateTo)
      issue.addIssue({ code: 'custom', path: ['startDateTo'], message: 'must not be before startDateFrom' });
  });

export type ListEventsArgs = RawPageArgs & Raw<z.input<typeof listEventsFilters>> & Raw<z.input<typeof adminEventArgs>>;

/** Each order's column (its SQL type), and its direction when the client names none. */
const EVENT_ORDER_COLUMNS = {
  created_at: { column: 'createdAt', type: 'timestamptz', natural: 'desc' },
  name: { column: 'name', type: 'text', natural: 'asc' },
  start_date: { column: 'firstStartsAt', type: 'timestamptz', natural: 'asc' },
} as const;

type EventOrder = ListOrder & { column: string; type: string };

/**
 * The order of a list of events: the sort column, then the id. Creation, newest first, is the
 * list's own order and keeps its plain cursors; every other order names itself in its cursors.
 */
function eventOrder(input: z.output<typeof eventOrderInput> | null | undefined): EventOrder {
  const field = input?.field ?? 'created_at';
  const { column, type, natural } = EVENT_ORDER_COLUMNS[field];
  const direction = input?.direction ?? natural;
  return {
    name: field === 'created_at' && direction === 'desc' ? null : `${field}:${direction}`,
    sort: [
      [column, direction],
      ['id', direction],
    ],
    ...(field === 'start_date' ? { nullable: column } : {}),
    column,
    type,
  };
}

/** ORDER BY of an event order over `alias` (`e.` or none); reversed for last/before. NULLs come last going forward. */
function orderSql(order: EventOrder, alias: string, reversed: boolean): string {
  const [[, direction]] = order.sort as [readonly [string, 'asc' | 'desc']];
  const sql = (direction === 'asc') !== reversed ? 'ASC' : 'DESC';
  const nulls = order.nullable ? (reversed ? ' NULLS FIRST' : ' NULLS LAST') : '';
  return `${alias}"${order.column}" ${sql}${nulls}, ${alias}id ${sql}`;
}

/**
 * The events strictly after (or before) the cursor's (value, id) in `order`, in SQL over `alias`.
 * Rows with a null value come after every other, ordered by id among themselves.
 */
function keysetSql(sql: Statement, order: EventOrder, [value, id]: unknown[], side: 'after' | 'before', alias: string): string {
  const [[, direction]] = order.sort as [readonly [string, 'asc' | 'desc']];
  const op = (direction === 'asc') === (side === 'after') ? '>' : '<';
  const column = `${alias}"${order.column}"`;
  const idParam = `${sql.param(id)}::text`;
  if (value === null) {
    return side === 'after'
      ? `(${column} IS NULL AND ${alias}id ${op} ${idParam})`
      : `(${column} IS NOT NULL OR ${alias}id ${op} ${idParam})`;
  }
  const beyond = `(${column}, ${alias}id) ${op} (${sql.param(value)}::${order.type}, ${idParam})`;
  return order.nullable && side === 'after' ? `(${beyond} OR ${column} IS NULL)` : beyond;
}

/**
 * A cursor's values as the order's columns take them (an instant or text, then an id): anything
 * else, such as a forged cursor, is refused as a cursor of another list, not cast by PostgreSQL.
 */
function checkCursor(order: EventOrder, request: PageRequest): void {
  if (request.kind !== 'cursor' || !request.values) return;
  const [value, id] = request.values;
  const fits =
    (value === null ? order.nullable !== undefined : order.type === 'text' ? typeof value === 'string' : value instanceof Date) &&
    typeof id === 'string';
  if (!fits) throw AppError.validation([{ path: request.backward ? 'before' : 'after', message: 'not a cursor of this list' }]);
}

/**
 * The columns of an event (as Prisma's Event has them) with its counts (kept on the row).
 * firstStartsAt is not a field of /v1's Event: it is read for the START_DATE order's cursors.
 */
const EVENT_COUNTS = EVENT.counts('e');
const EVENT_COLUMNS = `${EVENT.columns('e')}, ${EVENT_COUNTS}, e."firstStartsAt"`;

type EventRow = Event & EventCounts;

/** An event as read with its counts: the counts are kept for eventCounts, the row is the Event. */
function withCounts(row: EventRow): Event {
  const { productCount, ...event } = row;
  knownCounts.set(event, { occurrenceCount: row.occurrenceCount, ticketCount: row.ticketCount, productCount });
  return event;
}

/**
 * The conditions of a list of events, in SQL. The from/to filter keeps events with a scheduled
 * (not cancelled) occurrence in the range: a date bound means a whole calendar day in the
 * occurrence's own time zone (`to` includes its day), so "events on 2026-07-04" finds a show at
 * 21:00 in New York although that is already 5 July in UTC; an instant bound is exact. PostgreSQL
 * turns local days into instants with its own time zone database (which knows every zone Node's
 * does: test/catalogue/time-zones.test.ts), so the whole filter is one statement.
 */
function eventConditions(
  sql: Statement,
  filters: z.output<typeof listEventsFilters> & { updatedSince?: Date | null; venueId?: string | null },
  accounts: ReturnType<typeof readableAccounts>,
): string {
  const where = ['e."organisationId" = $1', 'NOT e."isDeleted"'];
  if (filters.updatedSince) where.push(`e."updatedAt" >= ${sql.param(filters.updatedSince)}::timestamptz`);
  if (typeof accounts === 'string') where.push(`e."accountId" = ${sql.param(accounts)}`);
  else if (accounts) where.push(`e."accountId" = ANY(${sql.param(accounts.in)}::text[])`);
  if (filters.status) where.push(`e.status = ${sql.param(filters.status)}::event_status`);
  if (filters.venueId) where.push(`e."venueId" = ${sql.param(filters.venueId)}`);
  if (filters.q) {
    const pattern = sql.param(`%${likeLiteral(filters.q)}%`);
    where.push(`(e.name ILIKE ${pattern} OR e.description ILIKE ${pattern})`);
  }
  const { from, to } = filters;
  if (from != null || to != null) {
    const range = ['o."organisationId" = $1', 'o."eventId" = e.id', "o.status = 'scheduled'"];
    // A local day's bounds depend on each occurrence's zone; every zone's midnight lies within a day
    // of UTC's, so a bound two days wider in UTC, computed once, lets PostgreSQL skip most rows
    // before it converts a zone (the conversion per row was most of a date-filtered list's cost).
    if (from instanceof Date) range.push(`o."startsAt" >= ${sql.param(from)}::timestamptz`);
    else if (from) {
      const day = sql.param(from);
      range.push(`o."startsAt" >= ((${day}::date - 2)::timestamp AT TIME ZONE 'UTC')`);
      range.push(`o."startsAt" >= (${day}::date::timestamp AT TIME ZONE o.timezone)`);
    }
    if (to instanceof Date) range.push(`o."startsAt" <= ${sql.param(to)}::timestamptz`);
    else if (to) {
      const day = sql.param(to);
      range.push(`o."startsAt" < ((${day}::date + 3)::timestamp AT TIME ZONE 'UTC')`);
      range.push(`o."startsAt" < ((${day}::date + 1)::timestamp AT TIME ZONE o.timezone)`);
    }
    where.push(`EXISTS (SELECT 1 FROM event_occurrences o WHERE ${range.join(' AND ')})`);
  }
  return where.join(' AND ');
}

/**
 * Events on the accounts the caller may read, newest first unless `orderBy` says otherwise, filtered
 * by status, account, venue, text (case-insensitive, in name or description), the from/to occurrence
 * range and `updatedSince`: the page, its total and each event's counts in one statement.
 */
export async function listEvents(ctx: RequestContext, args: ListEventsArgs): Promise<Page<Event>> {
  const { page, filters: given } = pageArgsOf(args);
  const { orderBy, updatedSince, venueId, startsFrom, startsTo, startDateFrom, startDateTo, ...rawFilters } = given;
  const adminArgs = validate(adminEventArgs, { orderBy, updatedSince, venueId, startsFrom, startsTo, startDateFrom, startDateTo });
  const order = eventOrder(adminArgs.orderBy);
  const request = pageRequest(page, order);
  checkCursor(order, request);
  const listed = validate(listEventsFilters, rawFilters);
  const filters = {
    ...listed,
    from: adminArgs.startsFrom ?? adminArgs.startDateFrom ?? listed.from,
    to: adminArgs.startsTo ?? adminArgs.startDateTo ?? listed.to,
    updatedSince: adminArgs.updatedSince,
    venueId: adminArgs.venueId,
  };
  const accounts = readableAccounts(ctx, 'events', filters.accountId);
  const sql = ctx.sql.statement();
  const where = eventConditions(sql, filters, accounts);
  // The page: an offset window (page/limit), or a keyset slice after or before a cursor's
  // (value, id) (first/after, last/before), one row more than asked to know whether more follow.
  const backward = request.kind === 'cursor' && request.backward;
  const sorted = orderSql(order, '', backward);
  let slice: string;
  if (request.kind === 'offset') {
    slice = `ORDER BY ${sorted} LIMIT ${sql.param(request.window.take)} OFFSET ${sql.param(request.window.offset)}`;
  } else {
    const bound = request.values ? `WHERE ${keysetSql(sql, order, request.values, backward ? 'before' : 'after', '')}` : '';
    slice = `${bound} ORDER BY ${sorted} LIMIT ${sql.param(request.size + 1)}`;
  }
  // The filter runs once (the matching ids and sort values, materialised): the total counts them,
  // the page sorts them and reads only its own rows, and the counts are of just those rows (not of
  // the rows the offset skips). The LEFT JOIN keeps the total when the page is past the end.
  // Measured against running the filter twice (count, then page): the same without a filter, text
  // and date filters ~1.5-2.5x cheaper in PostgreSQL.
  const sortColumn = `"${order.column}"`;
  sql.add(`WITH matching AS MATERIALIZED (SELECT e.id, e.${sortColumn} FROM events e WHERE ${where})
    SELECT counted.total, e.*
    FROM (SELECT count(*)::int AS total FROM matching) counted
    LEFT JOIN LATERAL (
      SELECT ${EVENT_COLUMNS}, page.position
      FROM (SELECT id, row_number() OVER (ORDER BY ${sorted}) AS position FROM (SELECT id, ${sortColumn} FROM matching ${slice}) sliced) page
      JOIN events e ON e."organisationId" = $1 AND e.id = page.id
    ) e ON true
    ORDER BY e.position`);
  const rows = await ctx.sql.rows<EventRow & { total: number; position: number }>(sql);
  const total = rows[0]?.total ?? 0;
  const events = rows.filter((row) => row.id !== null).map(({ total: _total, position: _position, ...row }) => withCounts(row));
  if (request.kind === 'offset') return toPage(request.window, total, events, (event) => cursorOf(order, event));
  return cursorPage(request, order, events, total, async (values) => {
    const before = ctx.sql.statement();
    const conditions = eventConditions(before, filters, accounts);
    before.add(`SELECT count(*)::int AS n FROM events e WHERE ${conditions} AND ${keysetSql(before, order, values, 'before', 'e.')}`);
    const [row] = await ctx.sql.rows<{ n: number }>(before);
    return row?.n ?? 0;
  });
}

/** One event the caller may read, with its counts, in one statement (GET /v1/events/{id}, `event`). */
export async function getEvent(ctx: RequestContext, id: string): Promise<Event> {
  const sql = ctx.sql.statement();
  sql.add(`SELECT ${EVENT_COLUMNS} FROM events e WHERE e."organisationId" = $1 AND e.id = ${sql.param(id)} AND NOT e."isDeleted"`);
  const [row] = await ctx.sql.rows<EventRow>(sql);
  return withCounts(authorised(ctx, row, 'events', 'read', 'Event'));
}

// ---------------------------------------------------------------------------------------------
// occurrenceCount, ticketCount, productCount

export interface EventCounts {
  occurrenceCount: number;
  ticketCount: number;
  productCount: number;
}

/** Counts read with their event (lists and single reads); an event read otherwise is counted in a batch. */
const knownCounts = new WeakMap<Event, EventCounts>();
const countBatch = batched((ctx, ids: string[]) => countEvents(ctx, ids));

/**
 * The counts of one event, batched (src/db/batch.ts): every event resolved while a request's batch
 * is open (a page of a list, in practice) is counted together by one statement. Counts are always
 * read fresh (not cached past the batch), so a mutation earlier in the same request shows.
 */
export async function eventCounts(ctx: RequestContext, event: Event): Promise<EventCounts> {
  return knownCounts.get(event) ?? (await countBatch(ctx, event.id)) ?? { occurrenceCount: 0, ticketCount: 0, productCount: 0 };
}

/** The counts of each of `eventIds` (src/resources/event.ts), in one statement. */
async function countEvents(ctx: RequestContext, eventIds: string[]): Promise<Map<string, EventCounts>> {
  const sql = ctx.sql.statement();
  sql.add(`SELECT e.id, ${EVENT_COUNTS} FROM events e WHERE e."organisationId" = $1 AND e.id = ANY(${sql.param(eventIds)}::text[])`);
  const rows = await ctx.sql.rows<EventCounts & { id: string }>(sql);
  return new Map(rows.map(({ id, ...counts }) => [id, counts]));
}
