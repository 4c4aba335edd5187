import { createCustomerToken, customerOrders, requestMagicLink } from '../../src/services/customers.ts';
import type { CartView } from '../../src/services/sales/cart-rows.ts';
import { itemInput } from '../../src/services/sales/cart-items.ts';
import { checkoutCart, checkoutCustomerInput } from '../../src/services/sales/check-out-cart.ts';
import { checkedOutOrder } from '../../src/services/sales/checked-out-order.ts';
import { confirmOrderWithSecretKey } from '../../src/services/sales/confirm-order.ts';
import { createCart } from '../../src/services/sales/create-cart.ts';
import { getCart } from '../../src/services/sales/get-cart.ts';
import type { PricedLine } from '../../src/services/sales/pricing.ts';
import { updateCart } from '../../src/services/sales/update-cart.ts';
import { builder } from '../builder.ts';
import { inputFrom } from '../input.ts';
import { statusEnum } from './common.ts';
import { Pagination, pageArgsFor } from '../pagination.ts';
import { Order, OrderStatus } from './order.ts';
import { answer, payload } from '../payload.ts';

/*
 * The storefront flow of the sales API (/live): carts, checkout, secret-key confirmation and
 * customer sign-in. Reachable only with a channel key (or, for the customer's own orders, a
 * customer token); management credentials are refused by the scopes.
 */

const CHANNEL = { salesChannel: true } as const;

const SalesCartLine = builder.objectRef<PricedLine>('SalesCartLine').implement({
  description: "One line of a cart, priced at the catalogue's current price.",
  fields: (t) => ({
    occurrenceId: t.exposeID('occurrenceId', { description: 'Occurrence (eoc_).' }),
    ticketTypeId: t.exposeID('ticketTypeId', { description: 'Ticket type (tkt_).' }),
    eventId: t.exposeID('eventId', { description: 'Event (evt_).' }),
    eventName: t.exposeString('eventName', { description: 'Name of the event.' }),
    ticketTypeName: t.exposeString('ticketTypeName', { description: 'Name of the ticket type.' }),
    startsAt: t.expose('startsAt', { type: 'DateTime', description: 'Start of the occurrence.' }),
    quantity: t.exposeInt('quantity', { description: 'Tickets on this line.' }),
    unitAmount: t.exposeInt('unitAmount', { description: 'Price of one ticket, in minor units.' }),
    totalAmount: t.exposeInt('totalAmount', { description: 'unitAmount x quantity, in minor units.' }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
    available: t.exposeInt('available', {
      nullable: true,
      description: 'Tickets of this type still available at the occurrence (null = unlimited).',
    }),
  }),
});

const CartStatus = statusEnum('CartStatus', 'cart', 'Where a cart stands.', {
  open: 'Lines may be added and changed.',
  checked_out: 'It became an order.',
  abandoned: 'It expired before checkout.',
});

const SalesCart = builder.objectRef<CartView>('SalesCart').implement({
  description: 'A cart of a sales session (crt_). It holds no tickets: checkout does.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Cart id (crt_).' }),
    sessionId: t.exposeID('sessionId', { description: 'Its sales session (ses_), also answered in X-Live-Session.' }),
    status: t.field({ type: CartStatus, description: 'Where the cart stands.', resolve: (cart) => cart.status }),
    currency: t.exposeString('currency', { nullable: true, description: 'ISO 4217 currency of its lines; null while empty.' }),
    items: t.field({ type: [SalesCartLine], description: 'Its lines, in the order given.', resolve: (cart) => cart.items }),
    itemCount: t.exposeInt('itemCount', { description: 'Tickets in the cart.' }),
    subtotalAmount: t.exposeInt('subtotalAmount', { description: 'Sum of the lines, in minor units.' }),
    totalAmount: t.exposeInt('totalAmount', { description: 'What checkout would charge now, in minor units.' }),
    orderId: t.exposeID('orderId', { nullable: true, description: 'The order it became (ord_), once checked out.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'An open cart is abandoned after this (each change renews it).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const SalesCartItemInput = inputFrom('SalesCartItemInput', itemInput, {
  description: 'A quantity of one ticket type for one occurrence.',
  fields: {
    occurrenceId: 'Occurrence (eoc_) of an event the channel sells.',
    ticketTypeId: "Ticket type (tkt_) of the occurrence's event.",
    quantity: '1 to 100, at most the type’s maxPerOrder and what remains.',
  },
});

const CheckoutCustomerInput = inputFrom('CheckoutCustomerInput', checkoutCustomerInput, {
  description: 'Who buys: found by email on the channel’s account, or created.',
  fields: {
    email: 'Email address (case-insensitive).',
    firstName: 'First name (kept only when the customer is new).',
    lastName: 'Last name (kept only when the customer is new).',
  },
});

const Checkout = builder.objectRef<Awaited<ReturnType<typeof checkoutCart>>>('SalesCheckout').implement({
  description: 'A pending order made from a cart, and where to pay it.',
  fields: (t) => ({
    // What the selection asks of it, from what the checkout's transaction wrote when that is all
    // it asks (checkedOutOrder: lines, passes, line count: the REST route's selection), else
    // loaded with everything it asks planned as one query.
    order: t.prismaField({
      type: 'Order',
      description: 'The pending order; its tickets are held until holdExpiresAt.',
      resolve: (query, r, _args, ctx) =>
        checkedOutOrder(query, r) ?? ctx.db.order.findUniqueOrThrow({ ...(query as object), where: { id: r.order.id } }),
    }),
    checkoutUrl: t.exposeString('checkoutUrl', { description: 'The hosted checkout page that pays it ({checkout_url}/{orderId}).' }),
  }),
});

/**
 * The signed-in customer's own record, answered to whoever proved to be them (a magic-link code, a
 * customer token); the Customer object itself stays closed to publishable keys.
 */
type Profile = {
  id: string;
  accountId: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  createdAt: Date;
  updatedAt: Date;
};
const CustomerProfile = builder.objectRef<Profile>('CustomerProfile').implement({
  description: 'The signed-in customer.',
  fields: (t) => ({
    customerId: t.exposeID('id', { description: 'The customer (cus_).' }),
    accountId: t.exposeID('accountId', { description: 'The account (acc_).' }),
    email: t.exposeString('email', { description: 'Email address, lower-cased.' }),
    firstName: t.exposeString('firstName', { nullable: true, description: 'First name, or null.' }),
    lastName: t.exposeString('lastName', { nullable: true, description: 'Last name, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time (first checkout).' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const CustomerToken = builder.objectRef<Awaited<ReturnType<typeof createCustomerToken>>>('CustomerToken').implement({
  description: 'A customer token: Authorization: Bearer on GET /live/sales/me/orders.',
  fields: (t) => ({
    customerToken: t.exposeString('customerToken', { description: 'The token (a JWT).' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'When it stops working.' }),
    customer: t.field({ type: CustomerProfile, description: 'The signed-in customer.', resolve: (r) => r.customer }),
  }),
});

const CustomerOrders = builder.objectRef<Awaited<ReturnType<typeof customerOrders>>>('CustomerOrders').implement({
  description: "A page of the signed-in customer's orders.",
  fields: (t) => ({
    customer: t.field({ type: CustomerProfile, description: 'The customer.', resolve: (r) => r.customer }),
    orders: t.field({ type: [Order], description: 'Orders, newest first, with their passes.', resolve: (r) => r.orders }),
    pagination: t.field({ type: Pagination, description: 'Page position and totals.', resolve: (r) => r.pagination }),
  }),
});

const Accepted = builder.objectRef<{ accepted: true }>('Accepted').implement({
  description: 'The request was taken; what follows happens out of band.',
  fields: (t) => ({ accepted: t.boolean({ description: 'Always true.', resolve: () => true }) }),
});

builder.queryFields((t) => ({
  salesCart: t.field({
    type: SalesCart,
    nullable: true,
    description: 'A cart of the request’s sales session (GET /live/sales/carts/{id}); a secret key reaches any cart of its channel.',
    authScopes: CHANNEL,
    args: { id: t.arg.id({ required: true, description: 'Cart id (crt_).' }) },
    resolve: (_root, { id }, ctx) => getCart(ctx, id),
  }),
  customerOrders: t.field({
    type: CustomerOrders,
    nullable: true,
    description: "The signed-in customer's orders and passes (GET /live/sales/me/orders). Takes a customer token.",
    authScopes: { customer: true },
    args: {
      status: t.arg({ type: OrderStatus, description: 'Only this status.' }),
      ...pageArgsFor(t),
    },
    resolve: (_root, args, ctx) => customerOrders(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  createSalesCart: t.field({
    ...payload('CreateSalesCart', 'salesCart', SalesCart, 'The cart created.'),
    description:
      'Creates a cart, starting a sales session unless the request names a valid one (POST /live/sales/carts; answers X-Live-Session).',
    authScopes: CHANNEL,
    args: { items: t.arg({ type: [SalesCartItemInput], description: 'Its first lines (optional).' }) },
    resolve: (_root, args, ctx) => answer(ctx, () => createCart(ctx, args), null),
  }),
  updateSalesCart: t.field({
    ...payload('UpdateSalesCart', 'salesCart', SalesCart, 'The cart as changed.'),
    description: "Replaces a cart's lines; an empty list empties it (PATCH /live/sales/carts/{id}).",
    authScopes: CHANNEL,
    args: {
      id: t.arg.id({ required: true, description: 'Cart id (crt_).' }),
      items: t.arg({ type: [SalesCartItemInput], required: true, description: 'The lines the cart should hold.' }),
    },
    resolve: (_root, { id, ...input }, ctx) => answer(ctx, () => updateCart(ctx, id, input), null),
  }),
  checkoutSalesCart: t.field({
    ...payload('CheckoutSalesCart', 'checkout', Checkout, 'The pending order and where to pay it.'),
    description:
      'Checks out a cart: finds or creates the customer (customer.created), holds the tickets and creates a pending order (order.created) (POST /live/sales/carts/{id}/checkout).',
    authScopes: CHANNEL,
    args: {
      id: t.arg.id({ required: true, description: 'Cart id (crt_).' }),
      customer: t.arg({
        type: CheckoutCustomerInput,
        description: 'Who buys; optional for a signed-in shopper (customer token beside the key).',
      }),
    },
    resolve: (_root, { id, ...input }, ctx) => answer(ctx, () => checkoutCart(ctx, id, input), null),
  }),
  confirmSalesOrder: t.field({
    ...payload('ConfirmSalesOrder', 'order', Order, 'The order as confirmed.'),
    description:
      'Confirms a pending order of the channel without the hosted checkout: order.confirmed, passes issued (ticket.issued) (POST /live/sales/orders/{id}/confirm). Secret key (svsk_) only.',
    authScopes: CHANNEL,
    args: { id: t.arg.id({ required: true, description: 'Order id (ord_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => confirmOrderWithSecretKey(ctx, id), null),
  }),
  requestCustomerMagicLink: t.field({
    ...payload('RequestCustomerMagicLink', 'accepted', Accepted, 'The request, accepted.'),
    description:
      'Mails a sign-in code to a customer of the channel’s account (POST /live/sales/customer-auth/magic-link); the same answer whether the address is known or not.',
    authScopes: CHANNEL,
    args: { email: t.arg.string({ required: true, description: 'Email address.' }) },
    resolve: (_root, args, ctx) => answer(ctx, () => requestMagicLink(ctx, args), null),
  }),
  createCustomerToken: t.field({
    ...payload('CreateCustomerToken', 'customerToken', CustomerToken, 'The customer token.'),
    description: 'Exchanges a magic-link code (single use, short-lived) for a customer token (POST /live/sales/customer-tokens).',
    authScopes: CHANNEL,
    args: { code: t.arg.string({ required: true, description: 'The code from the mail.' }) },
    resolve: (_root, args, ctx) => answer(ctx, () => createCustomerToken(ctx, args), null),
  }),
}));
