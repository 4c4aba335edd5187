import { z } from 'zod';
import { listQuery } from '../src/pagination.ts';
import { customerOrdersFilters, customerTokenInput, magicLinkInput } from '../src/services/customers.ts';
import { checkoutCartInput } from '../src/services/sales/check-out-cart.ts';
import { createCartInput } from '../src/services/sales/create-cart.ts';
import { updateCartInput } from '../src/services/sales/update-cart.ts';
import type { RestRoute } from './route.ts';
import { versioned } from './versioned.ts';
import { PAGINATION_FIELDS, idParam, pagination } from './shapes/common.ts';
import { CUSTOMER_PROFILE_FIELDS, ORDER_CORE_FIELDS, customer, orderCore } from './shapes/orders.ts';
import { statusOf } from '../src/statuses.ts';
import { LISTED_EVENT_STATUSES } from '../src/services/sellability.ts';
import { EVENT } from '../src/resources/event.ts';

/**
 * The sales API route table, mounted at /live. Routes take a sales channel key (Authorization:
 * Bearer or X-Channel-Key); the key names the organisation, so none needs X-Service-Org.
 */

/** The fields of an Event a listing shows, in its order. */
const LISTING_EVENT_FIELDS = ['id', 'name', 'description', 'status', 'timezone', 'venueId', 'tags'] as const;

/**
 * The listing types name each entity's id after the entity (`eventId`, `occurrenceId`...: their
 * `id` would be that entity's node's); the answers keep `id`, aliased.
 */
const LISTING_EVENT_SELECTION = LISTING_EVENT_FIELDS.map((name) => (name === 'id' ? 'id: eventId' : name)).join(' ');

const LISTING_FIELDS = `channel { id: channelId slug name }
  events {
    ${LISTING_EVENT_SELECTION}
    occurrences { id: occurrenceId startDate startTime endDate endTime timezone startsAt endsAt availability { ticketTypeId available } }
    ticketTypes { id: ticketTypeId name description priceAmount currency maxPerOrder salesStartAt salesEndAt onSale }
  }
  ${PAGINATION_FIELDS}`;

/** A listed event is an Event: what a version changes of events changes here too. */
const listingEvent = versioned(
  EVENT.rest(LISTING_EVENT_FIELDS, { status: z.enum(LISTED_EVENT_STATUSES as [string, ...string[]]) }).extend({
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
        salesStartAt: z.string().nullable(),
        salesEndAt: z.string().nullable(),
        onSale: z.boolean(),
      }),
    ),
  }),
  'Event',
);

const CART_FIELDS = `id sessionId status currency itemCount subtotalAmount totalAmount orderId expiresAt createdAt updatedAt
  items { occurrenceId ticketTypeId eventId eventName ticketTypeName startsAt quantity unitAmount totalAmount currency available }`;

const cart = z.object({
  id: z.string(),
  sessionId: z.string(),
  status: statusOf('cart'),
  currency: z.string().nullable(),
  itemCount: z.number().int(),
  subtotalAmount: z.number().int(),
  totalAmount: z.number().int(),
  orderId: z.string().nullable(),
  expiresAt: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  items: z.array(
    z.object({
      occurrenceId: z.string(),
      ticketTypeId: z.string(),
      eventId: z.string(),
      eventName: z.string(),
      ticketTypeName: z.string(),
      startsAt: z.string(),
      quantity: z.number().int(),
      unitAmount: z.number().int(),
      totalAmount: z.number().int(),
      currency: z.string(),
      available: z.number().int().nullable(),
    }),
  ),
});

export const liveRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/sales/listings',
    summary:
      "What the key's sales channel sells: published and on-sale events with their coming occurrences, ticket types and availability (page/limit by event).",
    tag: 'Sales',
    organisation: false,
    operation: `query SalesListings($page: Int, $limit: Int) { salesListings(page: $page, limit: $limit) { ${LISTING_FIELDS} } }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => data.salesListings,
    response: z.object({
      channel: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
      events: z.array(listingEvent),
      pagination,
    }),
  },
  {
    method: 'POST',
    path: '/sales/carts',
    summary:
      'Create a cart (optionally with lines). Starts a sales session unless X-Live-Session (or the live_session cookie) names a valid one of this channel; answers the session in X-Live-Session and a live_session cookie.',
    tag: 'Sales',
    organisation: false,
    operation: `mutation CreateSalesCart($items: [SalesCartItemInput!]) { createSalesCart(items: $items) { salesCart { ${CART_FIELDS} } } }`,
    body: createCartInput,
    bind: { '...': 'body' },
    result: (data) => ({ cart: data.createSalesCart.salesCart }),
    status: 201,
    response: z.object({ cart }),
  },
  {
    method: 'GET',
    path: '/sales/carts/{id}',
    summary: "Get a cart of the request's sales session (X-Live-Session); a secret key reaches any cart of its channel.",
    tag: 'Sales',
    organisation: false,
    operation: `query SalesCart($id: ID!) { salesCart(id: $id) { ${CART_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ cart: data.salesCart }),
    response: z.object({ cart }),
  },
  {
    method: 'PATCH',
    path: '/sales/carts/{id}',
    summary:
      "Replace a cart's lines (an empty list empties it). Lines not for sale are 400 naming the field; more tickets than remain is 409 naming the line.",
    tag: 'Sales',
    organisation: false,
    operation: `mutation UpdateSalesCart($id: ID!, $items: [SalesCartItemInput!]!) { updateSalesCart(id: $id, items: $items) { salesCart { ${CART_FIELDS} } } }`,
    params: idParam,
    body: updateCartInput,
    bind: { id: 'params.id', '...': 'body' },
    result: (data) => ({ cart: data.updateSalesCart.salesCart }),
    response: z.object({ cart }),
  },
  {
    method: 'POST',
    path: '/sales/carts/{id}/checkout',
    summary:
      'Check out a cart: the customer (found by email on the account, or created: customer.created; or the signed-in shopper when a customer token comes beside the key and no customer is given) gets a pending order whose tickets are held until holdExpiresAt (order.created). Pay it at checkoutUrl.',
    tag: 'Sales',
    organisation: false,
    operation: `mutation CheckoutSalesCart($id: ID!, $customer: CheckoutCustomerInput) {
      checkoutSalesCart(id: $id, customer: $customer) { checkout { order { ${ORDER_CORE_FIELDS} } checkoutUrl } } }`,
    params: idParam,
    body: checkoutCartInput,
    bind: { id: 'params.id', '...': 'body' },
    result: (data) => data.checkoutSalesCart.checkout,
    status: 201,
    response: z.object({ order: orderCore, checkoutUrl: z.string() }),
  },
  {
    method: 'POST',
    path: '/sales/orders/{id}/confirm',
    summary:
      'Confirm a pending order of the channel from a server (secret key svsk_ only; a publishable key gets 404): order.confirmed, one pass per ticket (ticket.issued). 409 when not pending; 410 when its hold expired.',
    tag: 'Sales',
    organisation: false,
    operation: `mutation ConfirmSalesOrder($id: ID!) { confirmSalesOrder(id: $id) { order { ${ORDER_CORE_FIELDS} } } }`,
    params: idParam,
    body: z.strictObject({}),
    bind: { id: 'params.id' },
    result: (data) => ({ order: data.confirmSalesOrder.order }),
    response: z.object({ order: orderCore }),
  },
  {
    method: 'POST',
    path: '/sales/customer-auth/magic-link',
    summary:
      "Mail a single-use sign-in code (and a link to the channel's storefrontUrl, when set) to a customer of the channel's account. 202 whether or not the address is known.",
    tag: 'Sales',
    organisation: false,
    operation: 'mutation RequestCustomerMagicLink($email: String!) { requestCustomerMagicLink(email: $email) { accepted { accepted } } }',
    body: magicLinkInput,
    bind: { '...': 'body' },
    result: (data) => data.requestCustomerMagicLink.accepted,
    status: 202,
    response: z.object({ accepted: z.literal(true) }),
  },
  {
    method: 'POST',
    path: '/sales/customer-tokens',
    summary: 'Exchange a magic-link code for a customer token. Unknown code 401; used 409; expired 410.',
    tag: 'Sales',
    organisation: false,
    operation: `mutation CreateCustomerToken($code: String!) { createCustomerToken(code: $code) { customerToken { customerToken expiresAt customer { ${CUSTOMER_PROFILE_FIELDS} } } } }`,
    body: customerTokenInput,
    bind: { '...': 'body' },
    result: (data) => data.createCustomerToken.customerToken,
    replay: 'never',
    status: 201,
    response: z.object({ customerToken: z.string(), expiresAt: z.string(), customer }),
  },
  {
    method: 'GET',
    path: '/sales/me/orders',
    summary: "The signed-in customer's orders with their passes, newest first (customer token as Authorization: Bearer).",
    tag: 'Sales',
    organisation: false,
    operation: `query CustomerOrders($status: OrderStatus, $page: Int, $limit: Int) {
      customerOrders(status: $status, page: $page, limit: $limit) { customer { ${CUSTOMER_PROFILE_FIELDS} } orders { ${ORDER_CORE_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(customerOrdersFilters),
    bind: { '...': 'query' },
    result: (data) => data.customerOrders,
    response: z.object({ customer, orders: z.array(orderCore), pagination }),
  },
];
