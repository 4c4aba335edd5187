import type { RequestContext } from '../../context.ts';
import type { TenantStatements } from '../../db/sql.ts';
import { AppError, type ValidationIssue } from '../../errors.ts';
import type { SalesChannel } from '../../generated/prisma/client.ts';
import { capacityOf } from '../inventory.ts';
import { remaining } from '../listings.ts';
import { LISTED_EVENT_STATUSES, salesClosed } from '../sellability.ts';
import type { CartItemInput } from './cart-items.ts';
import { releaseExpiredHolds } from './hold-sweep.ts';

/**
 * A cart's lines priced and checked against the catalogue as it is now. What a cart may hold:
 * occurrences still to come of the channel's published or on-sale events, inside the event's
 * on/off-sale dates and the ticket type's sales window, at most maxPerOrder of a type, one
 * currency per cart.
 */

export interface PricedLine {
  occurrenceId: string;
  ticketTypeId: string;
  quantity: number;
  eventId: string;
  eventName: string;
  ticketTypeName: string;
  startsAt: Date;
  unitAmount: number;
  totalAmount: number;
  currency: string;
  /** Catalogue capacity (null = unlimited). */
  capacity: number | null;
  /** What remains now (null = unlimited). */
  available: number | null;
}

interface Appraisal {
  /** The lines that may be sold now, priced, in the order given. */
  lines: PricedLine[];
  /** Every line whose occurrence and ticket type exist, priced at today's price (what a stored cart shows). */
  shown: PricedLine[];
  /** Why lines are not for sale (400). */
  issues: ValidationIssue[];
  /** Lines wanting more tickets than remain (409). */
  shortages: ValidationIssue[];
}

/**
 * Prices and checks lines against the catalogue as it is now (read on `on`, a flight of the
 * caller's, when given). Pending orders whose time ran out still count as held until a sweep
 * cancels them: when lines are short, that is done now for this organisation, and the lines are
 * looked at again once.
 */
export async function appraise(
  ctx: RequestContext,
  channel: SalesChannel,
  items: readonly CartItemInput[] | { cartId: string },
  { releaseHolds = true, on = ctx.sql }: { releaseHolds?: boolean; on?: TenantStatements } = {},
): Promise<Appraisal & { items: CartItemInput[] }> {
  if (!('cartId' in items) && items.length === 0) return { lines: [], shown: [], issues: [], shortages: [], items: [] };
  const now = new Date();
  const rows = await catalogueOf(on, channel, items);
  const given: CartItemInput[] = rows.map((row) => ({
    occurrenceId: row.itemOccurrenceId,
    ticketTypeId: row.itemTicketTypeId,
    quantity: row.quantity,
  }));
  const issues: ValidationIssue[] = [];
  const shortages: ValidationIssue[] = [];
  const lines: PricedLine[] = [];
  const shown: PricedLine[] = [];
  let currency: string | null = null;
  rows.forEach((row, index) => {
    const item = given[index]!;
    const at = `items.${index}`;
    const occurrence = row.occurrenceId === null ? null : row;
    const event = row.eventId === null ? null : row;
    const type =
      row.ticketTypeId === null
        ? null
        : {
            id: row.ticketTypeId,
            eventId: row.typeEventId!,
            isDeleted: row.typeDeleted!,
            maxPerOrder: row.maxPerOrder,
            currency: row.currency!,
            salesStartAt: row.salesStartAt,
            salesEndAt: row.salesEndAt,
          };
    const capacity = occurrence && type ? capacityOf({ capacity: row.occurrenceCapacity }, { capacity: row.typeCapacity }) : null;
    const line: PricedLine | null =
      occurrence && type
        ? {
            occurrenceId: row.occurrenceId!,
            ticketTypeId: type.id,
            quantity: item.quantity,
            eventId: row.eventId!,
            eventName: row.eventName!,
            ticketTypeName: row.ticketTypeName!,
            startsAt: row.startsAt!,
            unitAmount: row.priceAmount!,
            totalAmount: row.priceAmount! * item.quantity,
            currency: type.currency,
            capacity,
            available: remaining(capacity, row.held ?? 0, row.sold ?? 0),
          }
        : null;
    if (line) shown.push(line);
    const sold =
      occurrence &&
      event &&
      event.eventAccountId === channel.accountId &&
      !event.eventDeleted &&
      (LISTED_EVENT_STATUSES as readonly string[]).includes(event.eventStatus!) &&
      (channel.sellsAllEvents || event.listed);
    if (!occurrence || !event || !sold) {
      issues.push({ path: `${at}.occurrenceId`, message: 'No such occurrence on sale in this channel.' });
      return;
    }
    if (row.occurrenceStatus !== 'scheduled' || row.startsAt! <= now) {
      issues.push({ path: `${at}.occurrenceId`, message: 'This occurrence has started or was cancelled.' });
      return;
    }
    const eventClosed = salesClosed(event, { salesStartAt: null, salesEndAt: null }, now);
    if (eventClosed) {
      issues.push({ path: `${at}.${eventClosed.field}`, message: eventClosed.message });
      return;
    }
    if (!type || !line || type.isDeleted || type.eventId !== row.eventId) {
      issues.push({ path: `${at}.ticketTypeId`, message: "Not a ticket type of this occurrence's event." });
      return;
    }
    const closed = salesClosed(event, type, now);
    if (closed) {
      issues.push({ path: `${at}.${closed.field}`, message: closed.message });
      return;
    }
    if (type.maxPerOrder !== null && item.quantity > type.maxPerOrder) {
      issues.push({ path: `${at}.quantity`, message: `At most ${type.maxPerOrder} of this ticket type per order.` });
      return;
    }
    if (currency !== null && type.currency !== currency) {
      issues.push({
        path: `${at}.ticketTypeId`,
        message: `A cart holds one currency; this line is in ${type.currency}, the cart in ${currency}.`,
      });
      return;
    }
    currency = type.currency;
    if (line.available !== null && item.quantity > line.available) {
      shortages.push({
        path: `${at}.quantity`,
        message: line.available === 0 ? 'Sold out.' : `Only ${line.available} left.`,
      });
    }
    lines.push(line);
  });
  const appraisal = { lines, shown, issues, shortages, items: given };
  return releaseHolds ? appraisedAfterRelease(ctx, channel, items, appraisal) : appraisal;
}

/**
 * An appraisal short of tickets made again once holds whose time ran out are released (when there
 * were any): for an appraisal read with `releaseHolds: false` until the request was known to be
 * allowed (check-out-cart.ts).
 */
export async function appraisedAfterRelease<A extends Appraisal>(
  ctx: RequestContext,
  channel: SalesChannel,
  items: readonly CartItemInput[] | { cartId: string },
  appraisal: A,
): Promise<A | (Appraisal & { items: CartItemInput[] })> {
  if (appraisal.issues.length > 0 || appraisal.shortages.length === 0) return appraisal;
  if ((await releaseExpiredHolds(ctx.runtime, { organisationId: channel.organisationId })) === 0) return appraisal;
  return appraise(ctx, channel, items, { releaseHolds: false });
}

interface CatalogueRow {
  itemOccurrenceId: string;
  itemTicketTypeId: string;
  quantity: number;
  occurrenceId: string | null;
  occurrenceStatus: string | null;
  startsAt: Date | null;
  occurrenceCapacity: number | null;
  eventId: string | null;
  eventName: string | null;
  eventAccountId: string | null;
  eventDeleted: boolean | null;
  eventStatus: string | null;
  onSaleDate: Date | null;
  offSaleDate: Date | null;
  listed: boolean;
  ticketTypeId: string | null;
  ticketTypeName: string | null;
  typeEventId: string | null;
  typeDeleted: boolean | null;
  priceAmount: number | null;
  currency: string | null;
  typeCapacity: number | null;
  maxPerOrder: number | null;
  salesStartAt: Date | null;
  salesEndAt: Date | null;
  held: number | null;
  sold: number | null;
}

/**
 * Each line (given, or a stored cart's in its order) with what the catalogue says of it now: its
 * occurrence, event (and whether the channel lists it), ticket type and inventory; one statement.
 * A line naming what does not exist (or is another organisation's) comes back with nulls.
 */
async function catalogueOf(
  on: TenantStatements,
  channel: SalesChannel,
  items: readonly CartItemInput[] | { cartId: string },
): Promise<CatalogueRow[]> {
  const sql = on.statement();
  const source = !('cartId' in items)
    ? `SELECT * FROM unnest(${sql.param(items.map((item) => item.occurrenceId))}::text[], ${sql.param(
        items.map((item) => item.ticketTypeId),
      )}::text[], ${sql.param(items.map((item) => item.quantity))}::int[]) WITH ORDINALITY AS i(occurrence_id, ticket_type_id, quantity, idx)`
    : `SELECT ci."occurrenceId" AS occurrence_id, ci."ticketTypeId" AS ticket_type_id, ci.quantity,
         row_number() OVER (ORDER BY ci."createdAt", ci.id) AS idx
         FROM cart_items ci WHERE ci."organisationId" = $1 AND ci."cartId" = ${sql.param(items.cartId)}`;
  sql.add(`SELECT i.occurrence_id AS "itemOccurrenceId", i.ticket_type_id AS "itemTicketTypeId", i.quantity,
      o.id AS "occurrenceId", o.status::text AS "occurrenceStatus", o."startsAt", o.capacity AS "occurrenceCapacity",
      e.id AS "eventId", e.name AS "eventName", e."accountId" AS "eventAccountId", e."isDeleted" AS "eventDeleted",
      e.status::text AS "eventStatus", e."onSaleDate", e."offSaleDate",
      EXISTS (SELECT 1 FROM sales_channel_events l
               WHERE l."organisationId" = $1 AND l."channelId" = ${sql.param(channel.id)} AND l."eventId" = e.id) AS listed,
      t.id AS "ticketTypeId", t.name AS "ticketTypeName", t."eventId" AS "typeEventId", t."isDeleted" AS "typeDeleted",
      t."priceAmount", t.currency, t.capacity AS "typeCapacity", t."maxPerOrder", t."salesStartAt", t."salesEndAt",
      inv.held, inv.sold
    FROM (${source}) i
    LEFT JOIN event_occurrences o ON o."organisationId" = $1 AND o.id = i.occurrence_id
    LEFT JOIN events e ON e."organisationId" = $1 AND e.id = o."eventId"
    LEFT JOIN ticket_types t ON t."organisationId" = $1 AND t.id = i.ticket_type_id
    LEFT JOIN inventories inv ON inv."organisationId" = $1 AND inv."ticketTypeId" = i.ticket_type_id AND inv."occurrenceId" = i.occurrence_id
    ORDER BY i.idx`);
  return on.rows<CatalogueRow>(sql);
}

/** The lines, priced, when all may be sold now: else a 400 naming each field not for sale, or a 409 naming each line short of tickets. */
export async function priceLines(ctx: RequestContext, channel: SalesChannel, items: readonly CartItemInput[]): Promise<PricedLine[]> {
  const { lines, issues, shortages } = await appraise(ctx, channel, items);
  if (issues.length > 0) throw AppError.validation(issues);
  if (shortages.length > 0) throw soldOut(shortages);
  return lines;
}

export function soldOut(details: ValidationIssue[]): AppError {
  return new AppError('CONFLICT', 'Not enough tickets remain for this cart.', details);
}
