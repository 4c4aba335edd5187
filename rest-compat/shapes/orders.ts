import { z } from 'zod';
import { statusOf } from '../../src/statuses.ts';
import { versioned } from '../versioned.ts';

/** Order, customer and pass shapes shared by /v1 (management) and /live (sales API). */

/** A customer's fields after its id. */
const CUSTOMER_DETAIL_FIELDS = 'accountId email firstName lastName createdAt updatedAt';
export const CUSTOMER_FIELDS = `id ${CUSTOMER_DETAIL_FIELDS}`;
/**
 * The same answer read from a CustomerProfile (the signed-in customer on /live), which names the
 * customer's id `customerId` (its `id` is the Customer node's): aliased back to `id`.
 */
export const CUSTOMER_PROFILE_FIELDS = `id: customerId ${CUSTOMER_DETAIL_FIELDS}`;
export const PASS_FIELDS = 'id accountId orderId customerId ticketTypeId occurrenceId code status entitlementId redeemedAt createdAt';
export const LINE_ITEM_FIELDS = 'id ticketTypeId occurrenceId eventId ticketTypeName quantity unitAmount totalAmount currency';
export const PAYMENT_FIELDS = 'id amount currency method cardLast4 status failureReason createdAt';
export const REDEMPTION_FIELDS = 'id passId entitlementId accountId redeemedById redeemedAt';

/**
 * The sales API's view of an order: no customer record (a publishable key that checks out with
 * someone's email must not learn who they are) and no payments.
 */
export const ORDER_CORE_FIELDS = `id orderNumber status accountId channelId customerId currency subtotalAmount feeAmount totalAmount lineItemCount
  checkoutUrl holdExpiresAt confirmedAt cancelledAt refundedAt createdAt updatedAt
  lineItems { ${LINE_ITEM_FIELDS} } passes { ${PASS_FIELDS} }`;
/** The management view: with the customer and payments. */
export const ORDER_FIELDS = `${ORDER_CORE_FIELDS} customer { ${CUSTOMER_FIELDS} } payments { ${PAYMENT_FIELDS} }`;

const timestamp = z.string();

export const customer = versioned(
  z.object({
    id: z.string(),
    accountId: z.string(),
    email: z.string(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  }),
  'Customer',
);

export const pass = z.object({
  id: z.string(),
  accountId: z.string(),
  orderId: z.string(),
  customerId: z.string(),
  ticketTypeId: z.string(),
  occurrenceId: z.string(),
  code: z.string().nullable(),
  status: statusOf('pass'),
  entitlementId: z.string().nullable(),
  redeemedAt: timestamp.nullable(),
  createdAt: timestamp,
});

export const lineItem = z.object({
  id: z.string(),
  ticketTypeId: z.string(),
  occurrenceId: z.string(),
  eventId: z.string(),
  ticketTypeName: z.string(),
  quantity: z.number().int(),
  unitAmount: z.number().int(),
  totalAmount: z.number().int(),
  currency: z.string(),
});

export const payment = z.object({
  id: z.string(),
  amount: z.number().int(),
  currency: z.string(),
  method: z.string(),
  cardLast4: z.string().nullable(),
  status: statusOf('payment'),
  failureReason: z.string().nullable(),
  createdAt: timestamp,
});

export const orderCore = versioned(
  z.object({
    id: z.string(),
    orderNumber: z.string(),
    status: statusOf('order'),
    accountId: z.string(),
    channelId: z.string().nullable(),
    customerId: z.string(),
    currency: z.string(),
    subtotalAmount: z.number().int(),
    feeAmount: z.number().int(),
    totalAmount: z.number().int(),
    lineItemCount: z.number().int(),
    checkoutUrl: z.string().nullable(),
    holdExpiresAt: timestamp.nullable(),
    confirmedAt: timestamp.nullable(),
    cancelledAt: timestamp.nullable(),
    refundedAt: timestamp.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    lineItems: z.array(lineItem),
    passes: z.array(pass),
  }),
  'Order',
);

/** Orders (and what a version changed of them) read the same on /v1 and /live: both are marked Order. */
export const order = versioned(orderCore.extend({ customer, payments: z.array(payment) }), 'Order');

export const redemption = versioned(
  z.object({
    id: z.string(),
    passId: z.string(),
    entitlementId: z.string(),
    accountId: z.string(),
    redeemedById: z.string().nullable(),
    redeemedAt: timestamp,
  }),
  'Redemption',
);
