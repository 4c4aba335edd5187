import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Prisma, TicketType } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { changedSince, OLDEST_FIRST, type PageArgs, type PolledListArgs, paginate } from '../pagination.ts';
import { type Raw } from '../validation.ts';
import { instant } from '../time-zones.ts';
import { authorised } from './access.ts';
import { loadEvent } from './events.ts';
import { audited, changesBetween, auditedChange } from './audit.ts';
import { validate } from '../validation.ts';

const INT_MAX = 2_147_483_647;
const currencies = new Set(Intl.supportedValuesOf('currency'));

/** ISO 4217: three upper-case letters naming a currency. */
const currency = z
  .string()
  .regex(/^[A-Z]{3}$/, { error: 'an ISO 4217 currency code: three upper-case letters, e.g. EUR', abort: true })
  .refine((code) => currencies.has(code), 'not an ISO 4217 currency code');

const ticketTypeFields = {
  name: z.string().trim().min(1).max(255),
  description: z.string().max(5000).nullish(),
  priceAmount: z.number().int('an integer amount in minor units').min(0).max(INT_MAX),
  currency,
  capacity: z.number().int().min(0).max(INT_MAX).nullish(),
  maxPerOrder: z.number().int().min(1).max(INT_MAX).nullish(),
  salesStartAt: instant.nullish(),
  salesEndAt: instant.nullish(),
};

export const createTicketTypeInput = z.strictObject(ticketTypeFields);
export const updateTicketTypeInput = z.strictObject(ticketTypeFields).partial();

export type CreateTicketTypeInput = z.input<typeof createTicketTypeInput>;
export type UpdateTicketTypeInput = z.input<typeof updateTicketTypeInput>;

function checkSalesWindow(start: Date | null | undefined, end: Date | null | undefined): void {
  if (start && end && start.getTime() >= end.getTime()) {
    throw AppError.validation([{ path: 'salesEndAt', message: 'must be after salesStartAt' }]);
  }
}

/** Ticket types of an event, oldest first; deleted ones are left out. */
export async function listTicketTypes(ctx: RequestContext, eventId: string, args: PolledListArgs) {
  const { updatedSince, ...page } = args;
  const event = await loadEvent(ctx, eventId, 'read');
  const where = { eventId: event.id, isDeleted: false, ...changedSince(updatedSince) };
  return paginate(
    page as PageArgs,
    OLDEST_FIRST,
    (keyset) => ctx.db.ticketType.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.ticketType.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

export async function createTicketType(ctx: RequestContext, eventId: string, raw: Raw<CreateTicketTypeInput>): Promise<TicketType> {
  const event = await loadEvent(ctx, eventId, 'write');
  const input = validate(createTicketTypeInput, raw);
  checkSalesWindow(input.salesStartAt, input.salesEndAt);
  return audited(
    ctx,
    (tx) =>
      tx.ticketType.create({
        data: {
          id: newId('ticketType'),
          organisationId: ctx.organisation!.id,
          accountId: event.accountId,
          eventId: event.id,
          name: input.name,
          description: input.description ?? null,
          priceAmount: input.priceAmount,
          currency: input.currency,
          capacity: input.capacity ?? null,
          maxPerOrder: input.maxPerOrder ?? null,
          salesStartAt: input.salesStartAt ?? null,
          salesEndAt: input.salesEndAt ?? null,
        },
      }),
    (created) => ({
      action: 'ticket_type.created',
      targetId: created.id,
      accountId: created.accountId,
      changes: changesBetween(null, created),
    }),
  );
}

/** A live ticket type of a live event that the caller may `action`. */
async function loadTicketType(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<TicketType> {
  const ticketType = await ctx.db.ticketType.findFirst({ where: { id, isDeleted: false, event: { isDeleted: false } } });
  return authorised(ctx, ticketType, 'events', action, 'Ticket type');
}

export function getTicketType(ctx: RequestContext, id: string): Promise<TicketType> {
  return loadTicketType(ctx, id, 'read');
}

/** Changes a ticket type; omitted fields stay, null clears a nullable one. */
export async function updateTicketType(ctx: RequestContext, id: string, raw: Raw<UpdateTicketTypeInput>): Promise<TicketType> {
  const current = await loadTicketType(ctx, id, 'write');
  const input = validate(updateTicketTypeInput, raw);
  checkSalesWindow(
    input.salesStartAt === undefined ? current.salesStartAt : input.salesStartAt,
    input.salesEndAt === undefined ? current.salesEndAt : input.salesEndAt,
  );
  const data: Prisma.TicketTypeUncheckedUpdateInput = {};
  for (const key of Object.keys(ticketTypeFields) as Array<keyof typeof ticketTypeFields>) {
    if (input[key] !== undefined) (data as Record<string, unknown>)[key] = input[key];
  }
  return auditedChange(
    ctx,
    { table: 'ticket_types', id, read: (tx) => tx.ticketType.findFirst({ where: { id, isDeleted: false } }) },
    (tx) => tx.ticketType.update({ where: { id }, data }),
    (after, before) => ({
      action: 'ticket_type.updated',
      targetId: id,
      accountId: after.accountId,
      changes: changesBetween(before, after),
    }),
  );
}

/** Marks a ticket type deleted; it leaves the list and the event's ticketCount. */
export async function deleteTicketType(ctx: RequestContext, id: string): Promise<{ success: boolean; id: string }> {
  const ticketType = await loadTicketType(ctx, id, 'write');
  await audited(
    ctx,
    (tx) => tx.ticketType.update({ where: { id }, data: { isDeleted: true } }),
    () => ({
      action: 'ticket_type.deleted',
      targetId: id,
      accountId: ticketType.accountId,
      changes: { isDeleted: { before: false, after: true } },
    }),
  );
  return { success: true, id };
}
