import { z } from 'zod';
import type { RestRoute } from './route.ts';
import { PAGINATION_FIELDS, pageQuery, pagination } from './shapes/common.ts';

/**
 * The sales API route table, mounted at /live. Routes take a sales channel key (Authorization:
 * Bearer or X-Channel-Key); the key names the organisation, so none needs X-Service-Org.
 */

const LISTING_FIELDS = `channel { id slug name }
  events {
    id name description status timezone venueId tags
    occurrences { id startDate startTime endDate endTime timezone startsAt endsAt availability { ticketTypeId available } }
    ticketTypes { id name description priceAmount currency maxPerOrder }
  }
  ${PAGINATION_FIELDS}`;

const listingEvent = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  status: z.enum(['published', 'on_sale']),
  timezone: z.string(),
  venueId: z.string().nullable(),
  tags: z.array(z.string()),
  occurrences: z.array(
    z.object({
      id: z.string(),
      startDate: z.string(),
      startTime: z.string(),
      endDate: z.string().nullable(),
      endTime: z.string().nullable(),
      timezone: z.string(),
      startsAt: z.string(),
      endsAt: z.string().nullable(),
      availability: z.array(z.object({ ticketTypeId: z.string(), available: z.number().int().nullable() })),
    }),
  ),
  ticketTypes: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      description: z.string().nullable(),
      priceAmount: z.number().int(),
      currency: z.string(),
      maxPerOrder: z.number().int().nullable(),
    }),
  ),
});

export const liveRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/sales/listings',
    summary: "What the key's sales channel sells: published and on-sale events with their coming occurrences, ticket types and availability (page/limit by event).",
    tag: 'Sales',
    organisation: false,
    operation: `query SalesListings($page: Int, $limit: Int) { salesListings(page: $page, limit: $limit) { ${LISTING_FIELDS} } }`,
    query: z.object(pageQuery),
    variables: ({ query }) => query,
    result: (data) => data.salesListings,
    response: z.object({ channel: z.object({ id: z.string(), slug: z.string(), name: z.string() }), events: z.array(listingEvent), pagination }),
  },
];
