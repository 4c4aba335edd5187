import type { RequestContext } from '../../src/context.ts';
import { customerOrderInput, getCustomer, listCustomers } from '../../src/services/customers.ts';
import { getPass, listPasses, PASS_REFUSALS, redeemPass, type PassRefusal } from '../../src/services/passes.ts';
import { changeOrder } from '../../src/services/sales/change-order.ts';
import { getOrder, listOrders } from '../../src/services/sales/list-orders.ts';
import { checkoutUrl } from '../../src/services/sales/order-rows.ts';
import type { PaymentInput } from '../../src/services/sales/confirm-order.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { Node } from '../node.ts';
import { related, relatedUser } from '../../src/services/related.ts';
import { Event, relatedEvent } from './event.ts';
import { EventOccurrence } from './occurrence.ts';
import { TicketType } from './ticket-type.ts';
import { SalesChannel } from './sales-channel.ts';
import { User } from './user.ts';
import { AppError } from '../../src/errors.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { customerOrders, linesOfOrder } from '../../src/services/child-lists.ts';
import { selects } from '../selection.ts';

/** What an order line names, read with the lines when the selection asks for it. */
const LINE_RELATIONS = ['event', 'occurrence', 'ticketType'] as const;
import { describeEnumStatuses, OrderDirection, statusEnum, valuesEnum } from './common.ts';
import { inputFrom } from '../input.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { answer, payload } from '../payload.ts';

/*
 * Orders, customers, passes and redemptions. The same objects serve management (rights on the
 * row's account) and the sales API, where a channel key sees the orders its channel took (and,
 * with a secret key, their passes) and a customer token sees that customer's own; nothing else.
 */

const may = (ctx: RequestContext, resource: string, actions: string[], accountId: string) =>
  actions.some((action) => ctx.access.allows(resource, action, accountId));

function seesOrder(order: { accountId: string; channelId: string | null; customerId: string }, ctx: RequestContext): boolean {
  const p = ctx.principal;
  if (p?.kind === 'channel') return order.channelId === p.channelId || (p.customerId !== undefined && order.customerId === p.customerId);
  if (p?.kind === 'customer') return order.customerId === p.customerId;
  return may(ctx, 'orders', ['read', 'cancel', 'refund'], order.accountId);
}

function seesPass(pass: { accountId: string; customerId: string }, ctx: RequestContext): boolean {
  const p = ctx.principal;
  if (p?.kind === 'channel')
    return (p.keyKind === 'secret' && p.accountId === pass.accountId) || (p.customerId !== undefined && pass.customerId === p.customerId);
  if (p?.kind === 'customer') return pass.customerId === p.customerId;
  return may(ctx, 'passes', ['read', 'redeem'], pass.accountId) || may(ctx, 'orders', ['read', 'cancel', 'refund'], pass.accountId);
}

function seesCustomer(customer: { id: string; accountId: string }, ctx: RequestContext): boolean {
  const p = ctx.principal;
  // Not a publishable key: it lives in browsers, and checking out with someone's email must not
  // tell who they are.
  if (p?.kind === 'channel') return (p.keyKind === 'secret' && p.accountId === customer.accountId) || customer.id === p.customerId;
  if (p?.kind === 'customer') return customer.id === p.customerId;
  return may(ctx, 'customers', ['read'], customer.accountId) || may(ctx, 'orders', ['read', 'cancel', 'refund'], customer.accountId);
}

export const OrderStatus = statusEnum('OrderStatus', 'order', 'Where an order is in its lifecycle.', {
  pending: 'Checked out; tickets held until holdExpiresAt; not paid.',
  confirmed: 'Paid; passes issued.',
  cancelled: 'Cancelled (by management, or its hold expired); tickets back on sale, passes void.',
  refunded: 'Refunded after confirmation; tickets back on sale, passes not yet redeemed are void.',
});

const PassStatus = statusEnum('PassStatus', 'pass', 'Whether a pass still admits.', {
  issued: 'Valid; not redeemed yet.',
  redeemed: 'Scanned and redeemed.',
  void: 'Its order was cancelled or refunded; it no longer admits.',
});

export const Customer = builder.prismaObject('Customer', {
  interfaces: [Node],
  description: 'A customer of an account (cus_), created by their first checkout; one per (account, email).',
  authScopes: (customer, ctx) => seesCustomer(customer, ctx),
  fields: (t) => ({
    accountId: t.exposeID('accountId', { description: 'The account (acc_).' }),
    account: t.field(accountRelation()),
    email: t.exposeString('email', { description: 'Email address, lower-cased.' }),
    firstName: t.exposeString('firstName', { nullable: true, description: 'First name, or null.' }),
    lastName: t.exposeString('lastName', { nullable: true, description: 'Last name, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time (first checkout).' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

export const OrderLineItem = builder.prismaObject('OrderLineItem', {
  interfaces: [Node],
  description: 'One line of an order: a quantity of one ticket type for one occurrence, at the price of checkout.',
  // Reached only through its order, whose own scope decided who sees it.
  authScopes: (_line, ctx) => ctx.principal !== null,
  fields: (t) => ({
    ticketTypeId: t.exposeID('ticketTypeId', { description: 'Ticket type (tkt_).' }),
    occurrenceId: t.exposeID('occurrenceId', { description: 'Occurrence (eoc_).' }),
    eventId: t.exposeID('eventId', { description: 'Event (evt_) of the occurrence.' }),
    event: t.field({
      type: Event,
      nullable: true,
      description: 'The event, or null once deleted (null, with an error, where you may not read events).',
      resolve: (line, _args, ctx) => relatedEvent(ctx, line.eventId, line),
    }),
    occurrence: t.field({
      type: EventOccurrence,
      nullable: true,
      description: 'The occurrence (null, with an error, where you may not read events).',
      resolve: (line, _args, ctx) => related(ctx, 'occurrence', line.occurrenceId, line),
    }),
    ticketType: t.field({
      type: TicketType,
      nullable: true,
      description: 'The ticket type, or null once deleted (null, with an error, where you may not read events).',
      resolve: (line, _args, ctx) => related(ctx, 'ticketType', line.ticketTypeId, line),
    }),
    ticketTypeName: t.exposeString('ticketTypeName', {
      description: 'Name of the ticket type when the order was checked out (a later rename does not change it).',
    }),
    quantity: t.exposeInt('quantity', { description: 'Tickets on this line.' }),
    unitAmount: t.exposeInt('unitAmount', { description: 'Price of one ticket in minor units of currency.' }),
    totalAmount: t.exposeInt('totalAmount', { description: 'unitAmount x quantity, in minor units.' }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
  }),
});

const PaymentMethod = valuesEnum('PaymentMethod', 'How a payment was made.', {
  test_card: 'A test card on the hosted checkout page.',
  server_confirmation: "A confirmation by the channel's secret key (POST /live/sales/orders/{id}/confirm).",
});

const PaymentStatus = statusEnum('PaymentStatus', 'payment', 'The outcome of a payment try.', {
  succeeded: 'The amount was taken; the order is confirmed.',
  declined: 'The payment was refused; the order stays pending.',
});

export const Payment = builder.prismaObject('Payment', {
  interfaces: [Node],
  description: 'One payment try on an order: a test card on the hosted checkout, or a secret-key confirmation.',
  authScopes: (_payment, ctx) => ctx.principal !== null && ctx.principal.kind !== 'customer',
  fields: (t) => ({
    amount: t.exposeInt('amount', { description: 'Amount in minor units.' }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
    method: t.field({
      type: PaymentMethod,
      description: 'How it was paid.',
      resolve: (payment) => payment.method as PaymentInput['method'],
    }),
    cardLast4: t.exposeString('cardLast4', { nullable: true, description: 'Last four digits of the card, or null.' }),
    status: t.expose('status', { type: PaymentStatus, description: 'Its outcome.' }),
    failureReason: t.exposeString('failureReason', { nullable: true, description: 'Why it was declined, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was tried.' }),
  }),
});

export const Redemption = builder.prismaObject('Redemption', {
  interfaces: [Node],
  description: 'The one redemption of a pass at the door (red_).',
  authScopes: (redemption, ctx) => may(ctx, 'passes', ['read', 'redeem'], redemption.accountId),
  fields: (t) => ({
    passId: t.exposeID('passId', { description: 'The pass (pas_).' }),
    pass: t.field({
      type: Pass,
      nullable: true,
      description: 'The pass (null, with an error, where you may not read passes).',
      resolve: (redemption, _args, ctx) => related(ctx, 'pass', redemption.passId),
    }),
    entitlementId: t.exposeID('entitlementId', { description: 'The entitlement redeemed (ent_).' }),
    accountId: t.exposeID('accountId', { description: 'The account (acc_).' }),
    account: t.field(accountRelation()),
    redeemedById: t.exposeID('redeemedById', {
      nullable: true,
      description: 'The staff user who scanned it (usr_), or null for an API key.',
    }),
    redeemedBy: t.field({
      type: User,
      nullable: true,
      description:
        "The staff user who scanned it, or null for an API key (null, with an error, where you may not read that user: user(id:)'s rule).",
      resolve: (redemption, _args, ctx) => relatedUser(ctx, redemption.redeemedById),
    }),
    redeemedAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was redeemed.' }),
  }),
});

export const Pass = builder.prismaObject('Pass', {
  interfaces: [Node],
  description: 'One admission ticket of a confirmed order (pas_), with its scannable code.',
  authScopes: (pass, ctx) => seesPass(pass, ctx),
  fields: (t) => ({
    accountId: t.exposeID('accountId', { description: 'The account (acc_).' }),
    account: t.field(accountRelation()),
    orderId: t.exposeID('orderId', { description: 'The order (ord_).' }),
    order: t.field({
      type: Order,
      nullable: true,
      description: 'Its order (null, with an error, where you may not read orders).',
      resolve: (pass, _args, ctx) => related(ctx, 'order', pass.orderId),
    }),
    customerId: t.exposeID('customerId', { description: 'The customer (cus_).' }),
    customer: t.field({
      type: Customer,
      nullable: true,
      description: 'Its customer (null, with an error, where you may not read customers).',
      resolve: (pass, _args, ctx) => related(ctx, 'customer', pass.customerId),
    }),
    ticketTypeId: t.exposeID('ticketTypeId', { description: 'Ticket type (tkt_).' }),
    ticketType: t.field({
      type: TicketType,
      nullable: true,
      description: 'Its ticket type, or null once deleted (null, with an error, where you may not read events).',
      resolve: (pass, _args, ctx) => related(ctx, 'ticketType', pass.ticketTypeId),
    }),
    occurrenceId: t.exposeID('occurrenceId', { description: 'Occurrence it admits to (eoc_).' }),
    occurrence: t.field({
      type: EventOccurrence,
      nullable: true,
      description: 'The occurrence it admits to (null, with an error, where you may not read events).',
      resolve: (pass, _args, ctx) => related(ctx, 'occurrence', pass.occurrenceId),
    }),
    code: t.string({
      nullable: true,
      description:
        'Scannable code (16 characters), unique across the service; null for a caller who may read the order but not its passes (passes.read).',
      resolve: (pass, _args, ctx) =>
        ctx.principal?.kind === 'channel' || ctx.principal?.kind === 'customer' || may(ctx, 'passes', ['read', 'redeem'], pass.accountId)
          ? pass.code
          : null,
    }),
    status: t.expose('status', { type: PassStatus, description: `${describeEnumStatuses('pass')}.` }),
    entitlementId: t.id({
      nullable: true,
      description: 'The entitlement it carries (ent_).',
      select: { entitlements: { select: { id: true }, take: 1 } },
      resolve: (pass) => pass.entitlements[0]?.id ?? null,
    }),
    redeemedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it was redeemed, or null.',
      select: { redemptions: { select: { createdAt: true }, take: 1 } },
      resolve: (pass) => pass.redemptions[0]?.createdAt ?? null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Issue time.' }),
  }),
});

builder.prismaObjectField(Pass, 'redemption', (t) =>
  t.field({
    type: Redemption,
    nullable: true,
    description:
      'Its redemption at the door (who scanned it, when), or null until then (also null, with an error, where you may not read passes).',
    select: { redemptions: { take: 1 } },
    resolve: (pass) => pass.redemptions[0] ?? null,
  }),
);

export const Order = builder.prismaObject('Order', {
  interfaces: [Node],
  description: 'An order (ord_): a checked-out cart, with its lines, payments and passes.',
  authScopes: (order, ctx) => seesOrder(order, ctx),
  fields: (t) => ({
    orderNumber: t.exposeString('orderNumber', { description: 'Human-friendly number (SV-XXXXXXXX), unique in the organisation.' }),
    status: t.expose('status', { type: OrderStatus, description: `${describeEnumStatuses('order')}.` }),
    accountId: t.exposeID('accountId', { description: 'The account (acc_).' }),
    account: t.field(accountRelation()),
    channelId: t.exposeID('channelId', { nullable: true, description: 'The sales channel it was sold through (sch_).' }),
    channel: t.field({
      type: SalesChannel,
      nullable: true,
      description: 'The sales channel it was sold through, or null (also null, with an error, where you may not read sales channels).',
      resolve: (order, _args, ctx) => related(ctx, 'salesChannel', order.channelId),
    }),
    customerId: t.exposeID('customerId', { description: 'The customer (cus_).' }),
    customer: t.field({
      type: Customer,
      description: 'The customer.',
      // Batched with the customers of the other orders of a page (src/services/related.ts).
      resolve: async (order, _args, ctx) => {
        const customer = await related(ctx, 'customer', order.customerId);
        if (!customer) throw AppError.notFound('Customer not found.');
        return customer;
      },
    }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
    subtotalAmount: t.exposeInt('subtotalAmount', { description: 'Sum of the lines, in minor units.' }),
    feeAmount: t.exposeInt('feeAmount', { description: 'Fees, in minor units (0: no fees yet).' }),
    totalAmount: t.exposeInt('totalAmount', { description: 'What the customer pays, in minor units.' }),
    lineItemCount: t.relationCount('lineItems', { description: 'Number of lines.' }),
    // A list, not a connection: a cart holds at most 50 lines (src/services/sales/cart-items.ts), and
    // /v1 and /live answer an order with all of them. The lines of every order of a page are read by
    // one statement, with the events, occurrences and ticket types they name when the selection asks
    // for those (test/catalogue/graph-connections.test.ts).
    lineItems: t.field({
      type: [OrderLineItem],
      description: 'Its lines, in checkout order.',
      resolve: (order, _args, ctx, info) =>
        linesOfOrder(
          ctx,
          order,
          LINE_RELATIONS.filter((relation) => selects(info, [relation])),
        ),
    }),
    // Lists too: declined tries are capped per order (src/services/sales/record-declined-payment.ts)
    // and one succeeds; passes are one per ticket of at most 50 lines, and /v1 and /live answer an
    // order with all of them. plugin-prisma loads each for every order of a page together.
    payments: t.relation('payments', {
      description: 'Payment tries, oldest first.',
      query: { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
    }),
    passes: t.relation('passes', {
      description: 'Its passes (one per ticket, once confirmed), in issue order.',
      query: { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
    }),
    checkoutUrl: t.string({
      nullable: true,
      description: 'The hosted checkout page that pays it, while it is pending; null otherwise.',
      resolve: (order, _args, ctx) => (order.status === 'pending' ? checkoutUrl(ctx, order.id) : null),
    }),
    holdExpiresAt: t.expose('holdExpiresAt', {
      type: 'DateTime',
      nullable: true,
      description: 'While pending: until when its tickets are held.',
    }),
    confirmedAt: t.expose('confirmedAt', { type: 'DateTime', nullable: true, description: 'Confirmation time, or null.' }),
    cancelledAt: t.expose('cancelledAt', { type: 'DateTime', nullable: true, description: 'Cancellation time, or null.' }),
    refundedAt: t.expose('refundedAt', { type: 'DateTime', nullable: true, description: 'Refund time, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Checkout time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const OrderConnection = pagedConnection(Order, 'OrderConnection', 'orders');

builder.prismaObjectField(Customer, 'orders', (t) =>
  t.field({
    type: OrderConnection,
    nullable: true,
    description:
      'Their orders, newest first, as orders(customerId:) lists them; null, with an error, where you may not read orders on their account.',
    args: t.arg.connectionArgs(),
    resolve: (customer, args, ctx) => {
      if (!ctx.access.allows('orders', 'read', customer.accountId)) throw missingRight(ctx);
      return customerOrders(ctx, customer.id, args);
    },
  }),
);
const CustomerConnection = pagedConnection(Customer, 'CustomerConnection', 'customers');
const PassConnection = pagedConnection(Pass, 'PassConnection', 'passes');

const CustomerOrderField = valuesEnum('CustomerOrderField', 'What a list of customers is sorted by.', {
  created_at: 'Creation time (first checkout); newest first unless direction says ASC. The default order.',
  email: 'Email address (lower-cased), A first unless direction says DESC (ties by id).',
});

const CustomerOrder = inputFrom('CustomerOrder', customerOrderInput, {
  description: 'How to sort customers. A cursor holds its order: a cursor of one order is refused by another (VALIDATION_FAILED).',
  fields: {
    field: { description: 'What to sort by.', type: CustomerOrderField },
    direction: { description: 'Which way: CREATED_AT runs DESC, EMAIL runs ASC when left out.', type: OrderDirection },
  },
});

const ORDERS_READ = { $all: { organisation: true, permission: 'orders.read' } } as const;

builder.queryFields((t) => ({
  orders: t.field({
    type: OrderConnection,
    nullable: true,
    description: 'Orders on the accounts the caller may read, newest first (GET /v1/orders).',
    authScopes: ORDERS_READ,
    args: {
      status: t.arg({ type: OrderStatus, description: 'Only this status.' }),
      customerId: t.arg.id({ description: 'Only this customer (cus_).' }),
      accountId: t.arg.id({ description: 'Only this account (acc_).' }),
      channelId: t.arg.id({ description: 'Only this sales channel (sch_).' }),
      eventId: t.arg.id({ description: 'Only orders with a line of this event (evt_).' }),
      occurrenceId: t.arg.id({ description: 'Only orders with a line of this occurrence (eoc_).' }),
      orderNumber: t.arg.string({ description: 'Only the order with this number.' }),
      search: t.arg.string({
        description:
          "A search box's text (1 to 200 characters): orders whose number, or whose customer's email or name, holds it (case-insensitive).",
      }),
      createdAfter: t.arg({ type: 'DateTime', description: 'Only orders created at or after this instant.' }),
      createdBefore: t.arg({ type: 'DateTime', description: 'Only orders created at or before this instant.' }),
      updatedSince: updatedSinceArg(t, 'orders created or changed (confirmed, cancelled, refunded)'),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
    },
    resolve: (_root, args, ctx) => listOrders(ctx, args),
  }),
  order: t.field({
    type: Order,
    nullable: true,
    description: 'One order (GET /v1/orders/{id}).',
    authScopes: ORDERS_READ,
    args: { id: t.arg.id({ required: true, description: 'Order id (ord_).' }) },
    resolve: (_root, { id }, ctx) => getOrder(ctx, id),
  }),
  customers: t.field({
    type: CustomerConnection,
    nullable: true,
    description: 'Customers on the accounts the caller may read, newest first (GET /v1/customers).',
    authScopes: { $all: { organisation: true, permission: 'customers.read' } },
    args: {
      email: t.arg.string({ description: 'Only this email address (case-insensitive, exact).' }),
      search: t.arg.string({ description: "A search box's text (1 to 200 characters) in the email or name (case-insensitive)." }),
      accountId: t.arg.id({ description: 'Only this account (acc_).' }),
      updatedSince: updatedSinceArg(t, 'customers created or changed'),
      orderBy: t.arg({
        type: CustomerOrder,
        description:
          'The order: CREATED_AT (the default: newest first) or EMAIL (A first), each with a direction. Every order pages by cursor without repeating or skipping a customer; a cursor of another order is refused.',
      }),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
    },
    resolve: (_root, args, ctx) => listCustomers(ctx, args),
  }),
  customer: t.field({
    type: Customer,
    nullable: true,
    description: 'One customer (GET /v1/customers/{id}).',
    authScopes: { $all: { organisation: true, permission: 'customers.read' } },
    args: { id: t.arg.id({ required: true, description: 'Customer id (cus_).' }) },
    resolve: (_root, { id }, ctx) => getCustomer(ctx, id),
  }),
  passes: t.field({
    type: PassConnection,
    nullable: true,
    description: 'Passes on the accounts the caller may read, in issue order (GET /v1/passes).',
    authScopes: { $all: { organisation: true, permission: 'passes.read' } },
    args: {
      orderId: t.arg.id({ description: 'Only this order (ord_).' }),
      customerId: t.arg.id({ description: 'Only this customer (cus_).' }),
      occurrenceId: t.arg.id({ description: 'Only this occurrence (eoc_).' }),
      status: t.arg({ type: PassStatus, description: 'Only this status.' }),
      accountId: t.arg.id({ description: 'Only this account (acc_).' }),
      updatedSince: updatedSinceArg(t, 'passes issued or changed (redeemed, void)'),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
    },
    resolve: (_root, args, ctx) => listPasses(ctx, args),
  }),
  pass: t.field({
    type: Pass,
    nullable: true,
    description: 'One pass (GET /v1/passes/{id}).',
    authScopes: { $all: { organisation: true, permission: 'passes.read' } },
    args: { id: t.arg.id({ required: true, description: 'Pass id (pas_).' }) },
    resolve: (_root, { id }, ctx) => getPass(ctx, id),
  }),
}));

const PassRefusalReason = valuesEnum('PassRefusalReason', 'Why the door refused a pass.', {
  already_redeemed: 'It was redeemed before (redeemedAt says when).',
  void: 'Its order was cancelled or refunded.',
  other_occurrence: 'It admits to another occurrence than the scanner admits to.',
  occurrence_cancelled: 'Its occurrence was cancelled: it admits no one.',
  no_entry: 'It grants no entry.',
} satisfies Record<PassRefusal, string>);

const PassRefusalRef = builder
  .objectRef<{ reason: PassRefusal; redeemedAt: string | null; passOccurrenceId: string | null }>('PassRefusal')
  .implement({
    description: 'Why the door refused a pass, for a scanner to show without reading the message.',
    fields: (t) => ({
      reason: t.field({ type: PassRefusalReason, description: 'The reason.', resolve: (refusal) => refusal.reason }),
      redeemedAt: t.field({
        type: 'DateTime',
        nullable: true,
        description: 'When it was redeemed (ALREADY_REDEEMED), else null.',
        resolve: (refusal) => refusal.redeemedAt,
      }),
      passOccurrenceId: t.id({
        nullable: true,
        description: 'The occurrence the pass admits to (OTHER_OCCURRENCE), else null.',
        resolve: (refusal) => refusal.passOccurrenceId,
      }),
      passOccurrence: t.field({
        type: EventOccurrence,
        nullable: true,
        description: 'The occurrence the pass admits to (OTHER_OCCURRENCE), for a scanner to show when to come; else null.',
        resolve: (refusal, _args, ctx) => related(ctx, 'occurrence', refusal.passOccurrenceId),
      }),
    }),
  });

const RedeemPassPayload = payload('RedeemPass', 'redemption', Redemption, 'The redemption made.');

builder.objectField(RedeemPassPayload.type, 'refusal', (t) =>
  t.field({
    type: PassRefusalRef,
    nullable: true,
    description:
      'Why the pass was refused (userErrors holds CONFLICT with the message); null when it was redeemed, or refused for its input.',
    resolve: ({ failure }) => {
      const detail = Array.isArray(failure?.details) ? (failure.details[0] as Record<string, unknown> | undefined) : undefined;
      const reason = detail?.reason as PassRefusal | undefined;
      if (!reason || !PASS_REFUSALS.includes(reason)) return null;
      return {
        reason,
        redeemedAt: typeof detail?.redeemedAt === 'string' ? detail.redeemedAt : null,
        passOccurrenceId: typeof detail?.passOccurrenceId === 'string' ? detail.passOccurrenceId : null,
      };
    },
  }),
);

builder.mutationFields((t) => ({
  cancelOrder: t.field({
    ...payload('CancelOrder', 'order', Order, 'The order as cancelled.'),
    description:
      'Cancels a pending or confirmed order: tickets back on sale, passes not yet redeemed void; order.cancelled (POST /v1/orders/{id}/cancel). CONFLICT when cancelled or refunded already.',
    authScopes: { $all: { organisation: true, permission: 'orders.cancel' } },
    args: { id: t.arg.id({ required: true, description: 'Order id (ord_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => changeOrder(ctx, id, 'cancel'), null),
  }),
  refundOrder: t.field({
    ...payload('RefundOrder', 'order', Order, 'The order as refunded.'),
    description:
      'Refunds a confirmed order: tickets back on sale, passes not yet redeemed void; order.refunded (POST /v1/orders/{id}/refund). CONFLICT unless confirmed.',
    authScopes: { $all: { organisation: true, permission: 'orders.refund' } },
    args: { id: t.arg.id({ required: true, description: 'Order id (ord_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => changeOrder(ctx, id, 'refund'), null),
  }),
  redeemPass: t.field({
    ...RedeemPassPayload,
    description:
      'Redeems a pass at the door, by id or by code (POST /v1/passes/{id}/redeem, POST /v1/redemptions); ticket.redeemed. A second scan, a void pass or one of another occurrence is refused with CONFLICT and `refusal` saying why.',
    authScopes: { $all: { organisation: true, permission: 'passes.redeem' } },
    args: {
      passId: t.arg.id({ description: 'Pass id (pas_); or give code.' }),
      code: t.arg.string({ description: 'The code printed on the pass; or give passId.' }),
      occurrenceId: t.arg.id({
        description: 'The occurrence the scanner admits to (eoc_): a pass for another one is refused (OTHER_OCCURRENCE).',
      }),
    },
    resolve: (_root, args, ctx) => answer(ctx, () => redeemPass(ctx, args), null),
  }),
}));
