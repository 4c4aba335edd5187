import { z } from 'zod';
import type { RestRoute } from '../route.ts';
import { idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { listQuery } from '../../src/pagination.ts';
import { createVenueInput, listVenuesFilters, updateVenueInput } from '../../src/services/venues.ts';

const VENUE_FIELDS = `id organisationId accountId name addressLine1 addressLine2 city region postalCode country timezone capacity
  createdAt updatedAt`;

const venue = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string(),
  name: z.string(),
  addressLine1: z.string().nullable(),
  addressLine2: z.string().nullable(),
  city: z.string().nullable(),
  region: z.string().nullable(),
  postalCode: z.string().nullable(),
  country: z.string().nullable(),
  timezone: z.string().nullable(),
  capacity: z.number().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const venuesRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/venues',
    summary: 'List venues on the accounts you may read, by name; optionally of one account.',
    tag: 'Venues',
    organisation: true,
    operation: `query Venues($page: Int, $limit: Int, $accountId: ID) {
      venues(page: $page, limit: $limit, accountId: $accountId) { nodes { ${VENUE_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    query: listQuery(listVenuesFilters),
    bind: { '...': 'query' },
    result: (data) => ({ venues: data.venues.nodes, pagination: data.venues.pagination }),
    response: z.object({ venues: z.array(venue), pagination }),
  },
  {
    method: 'POST',
    path: '/venues',
    summary: 'Create a venue on an account.',
    tag: 'Venues',
    organisation: true,
    operation: `mutation CreateVenue($input: CreateVenueInput!) { createVenue(input: $input) { venue { ${VENUE_FIELDS} } } }`,
    body: createVenueInput,
    bind: { input: 'body' },
    result: (data) => ({ venue: data.createVenue.venue }),
    status: 201,
    response: z.object({ venue }),
  },
  {
    method: 'GET',
    path: '/venues/{id}',
    summary: 'Get a venue.',
    tag: 'Venues',
    organisation: true,
    operation: `query Venue($id: ID!) { venue(id: $id) { ${VENUE_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ venue: data.venue }),
    response: z.object({ venue }),
  },
  {
    method: 'PATCH',
    path: '/venues/{id}',
    summary: 'Change a venue; omitted fields stay, null clears a nullable one. The account cannot change.',
    tag: 'Venues',
    organisation: true,
    operation: `mutation UpdateVenue($id: ID!, $input: UpdateVenueInput!) { updateVenue(id: $id, input: $input) { venue { ${VENUE_FIELDS} } } }`,
    params: idParam,
    body: updateVenueInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ venue: data.updateVenue.venue }),
    response: z.object({ venue }),
  },
];
