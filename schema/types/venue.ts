import { createVenue, createVenueInput, getVenue, listVenues, updateVenue, updateVenueInput } from '../../src/services/venues.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';

const READ = { $all: { organisation: true, permission: 'venues.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'venues.write' } } as const;

export const Venue = builder.prismaObject('Venue', {
  interfaces: [Node],
  description: 'A place where events happen (vnu_), owned by one account.',
  authScopes: (venue, ctx) => ctx.access.allows('venues', 'read', venue.accountId) || ctx.access.allows('venues', 'write', venue.accountId),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    accountId: t.exposeID('accountId', { description: 'Owning account.' }),
    account: t.field(accountRelation()),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    addressLine1: t.exposeString('addressLine1', { nullable: true, description: 'First address line, or null.' }),
    addressLine2: t.exposeString('addressLine2', { nullable: true, description: 'Second address line, or null.' }),
    city: t.exposeString('city', { nullable: true, description: 'City, or null.' }),
    region: t.exposeString('region', { nullable: true, description: 'Region, state or county, or null.' }),
    postalCode: t.exposeString('postalCode', { nullable: true, description: 'Postal code, or null.' }),
    country: t.exposeString('country', { nullable: true, description: 'ISO 3166-1 alpha-2 country code, or null.' }),
    timezone: t.expose('timezone', {
      type: 'TimeZone',
      nullable: true,
      description: 'IANA time zone, or null; new events at the venue default to it.',
    }),
    capacity: t.exposeInt('capacity', { nullable: true, description: 'Number of people the venue holds, or null when not given.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const VenueConnection = pagedConnection(Venue, 'VenueConnection', 'venues');

/** The descriptions of the optional fields both venue inputs share. */
const VENUE_FIELD_DESCRIPTIONS = {
  addressLine1: 'At most 255 characters; null clears it.',
  addressLine2: 'At most 255 characters; null clears it.',
  city: 'At most 255 characters; null clears it.',
  region: 'At most 255 characters; null clears it.',
  postalCode: 'At most 32 characters; null clears it.',
  country: 'ISO 3166-1 alpha-2 code in upper case (e.g. GB); null clears it.',
  timezone: 'IANA time zone name (e.g. Europe/London); null clears it.',
  capacity: 'Number of people the venue holds, 0 or more; null clears it.',
};

const CreateVenueInput = inputFrom('CreateVenueInput', createVenueInput, {
  description: 'A new venue.',
  fields: {
    accountId: 'Owning account (acc_): not deleted, and you need venues.write on it.',
    name: 'Name, 1 to 255 characters.',
    ...VENUE_FIELD_DESCRIPTIONS,
  },
});

const UpdateVenueInput = inputFrom('UpdateVenueInput', updateVenueInput, {
  description: 'Changes to a venue; omitted fields stay.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    ...VENUE_FIELD_DESCRIPTIONS,
  },
});

builder.queryFields((t) => ({
  venues: t.field({
    type: VenueConnection,
    nullable: true,
    description: 'Venues on the accounts you may read, by name (GET /v1/venues).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      accountId: t.arg.id({ description: 'Only this account.' }),
      updatedSince: updatedSinceArg(t, 'venues created or changed', 'deleted ones leave the list'),
    },
    resolve: (_root, args, ctx) => listVenues(ctx, args),
  }),
  venue: t.field({
    type: Venue,
    nullable: true,
    description: 'One venue (GET /v1/venues/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Venue id (vnu_).' }) },
    resolve: (_root, { id }, ctx) => getVenue(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createVenue: t.field({
    ...payload('CreateVenue', 'venue', Venue, 'The venue created.'),
    description: 'Creates a venue (POST /v1/venues).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateVenueInput, required: true, description: 'The venue.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createVenue(ctx, input)),
  }),
  updateVenue: t.field({
    ...payload('UpdateVenue', 'venue', Venue, 'The venue as changed.'),
    description: 'Changes a venue (PATCH /v1/venues/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Venue id (vnu_).' }),
      input: t.arg({ type: UpdateVenueInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateVenue(ctx, id, input)),
  }),
}));
