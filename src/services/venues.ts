import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import type { Prisma, Venue } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { changedSince, type PolledListArgs, paginate } from '../pagination.ts';
import { owningAccount } from './accounts.ts';
import { type Raw } from '../validation.ts';
import { timeZone } from '../time-zones.ts';
import { authorised, readableAccounts } from './access.ts';
import { reference, validate } from '../validation.ts';
import { audited, changesBetween, auditedChange } from './audit.ts';

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** ISO 3166-1 alpha-2, upper case, and a code Intl knows as a region (so not ZZ or QQ). */
const country = z
  .string()
  .regex(/^[A-Z]{2}$/, { error: 'an ISO 3166-1 alpha-2 country code in upper case, e.g. GB', abort: true })
  .refine((code) => {
    const name = regionNames.of(code);
    return name !== undefined && name !== code && name !== 'Unknown Region';
  }, 'not an ISO 3166-1 alpha-2 country code');

const line = z.string().trim().max(255);

const venueFields = {
  name: z.string().trim().min(1).max(255),
  addressLine1: line.nullish(),
  addressLine2: line.nullish(),
  city: line.nullish(),
  region: line.nullish(),
  postalCode: z.string().trim().max(32).nullish(),
  country: country.nullish(),
  timezone: timeZone.nullish(),
  capacity: z.number().int().min(0).max(2_147_483_647).nullish(),
};

export const createVenueInput = z.strictObject({ accountId: reference, ...venueFields });
export const updateVenueInput = z.strictObject(venueFields).partial();
export const listVenuesFilters = z.object({ accountId: reference.nullish() });

export type CreateVenueInput = z.input<typeof createVenueInput>;
export type UpdateVenueInput = z.input<typeof updateVenueInput>;

/** Venues on the accounts the caller may read, by name. */
export async function listVenues(ctx: RequestContext, args: PolledListArgs & Raw<z.input<typeof listVenuesFilters>>) {
  const { page, limit, first, after, last, before, updatedSince, ...rawFilters } = args;
  const filters = validate(listVenuesFilters, rawFilters);
  const accountId = readableAccounts(ctx, 'venues', filters.accountId);
  const where: Prisma.VenueWhereInput = {
    isDeleted: false,
    ...(accountId === undefined ? {} : { accountId }),
    ...changedSince(updatedSince),
  };
  return paginate(
    { page, limit, first, after, last, before },
    [
      ['name', 'asc'],
      ['id', 'asc'],
    ] as const,
    (keyset) => ctx.db.venue.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.venue.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

async function loadVenue(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<Venue> {
  return authorised(ctx, await ctx.db.venue.findFirst({ where: { id, isDeleted: false } }), 'venues', action, 'Venue');
}

export function getVenue(ctx: RequestContext, id: string): Promise<Venue> {
  return loadVenue(ctx, id, 'read');
}

export async function createVenue(ctx: RequestContext, raw: Raw<CreateVenueInput>): Promise<Venue> {
  const { accountId: requested, ...input } = validate(createVenueInput, raw);
  const accountId = await owningAccount(ctx, 'venues', requested);
  return audited(
    ctx,
    (tx) =>
      tx.venue.create({
        data: {
          id: newId('venue'),
          organisationId: ctx.organisation!.id,
          accountId,
          name: input.name,
          addressLine1: input.addressLine1 ?? null,
          addressLine2: input.addressLine2 ?? null,
          city: input.city ?? null,
          region: input.region ?? null,
          postalCode: input.postalCode ?? null,
          country: input.country ?? null,
          timezone: input.timezone ?? null,
          capacity: input.capacity ?? null,
        },
      }),
    (venue) => ({ action: 'venue.created', targetId: venue.id, accountId, changes: changesBetween(null, venue) }),
  );
}

/** Changes a venue; omitted fields stay, null clears a field (except name). */
export async function updateVenue(ctx: RequestContext, id: string, raw: Raw<UpdateVenueInput>): Promise<Venue> {
  await loadVenue(ctx, id, 'write');
  const input = validate(updateVenueInput, raw);
  const data: Prisma.VenueUncheckedUpdateInput = {};
  for (const key of Object.keys(venueFields) as Array<keyof typeof venueFields>) {
    if (input[key] !== undefined) (data as Record<string, unknown>)[key] = input[key];
  }
  return auditedChange(
    ctx,
    { table: 'venues', id, read: (tx) => tx.venue.findFirst({ where: { id, isDeleted: false } }) },
    (tx) => tx.venue.update({ where: { id }, data }),
    (after, before) => ({ action: 'venue.updated', targetId: id, accountId: after.accountId, changes: changesBetween(before, after) }),
  );
}
