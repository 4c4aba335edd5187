import { z } from 'zod';
import { listQuery } from '../../src/pagination.ts';
import { listOrdersFilters } from '../../src/services/sales/list-orders.ts';
import { listCustomersFilters } from '../../src/services/customers.ts';
import { listPassesFilters, redeemPassByCodeBody, redeemPassByIdBody } from '../../src/services/passes.ts';
import type { RestRoute } from '../route.ts';
import { idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { CUSTOMER_FIELDS, ORDER_FIELDS, PASS_FIELDS, REDEMPTION_FIELDS, customer, order, pass, redemption } from '../shapes/orders.ts';

export const ordersRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/orders',
    summary: 'List orders on the accounts the caller may read, newest first; filter by status, customer, account or channel.',
    tag: 'Orders',
    organisation: true,
    operation: `query Orders($status: OrderStatus, $customerId: ID, $accountId: ID, $channelId: ID, $page: Int, $limit: Int) {
      orders(status: $status, customerId: $customerId, accountId: $accountId, channelId: $channelId, page: $page, limit: $limit) { nodes { ${ORDER_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(listOrdersFilters),
    bind: { '...': 'query' },
    result: (data) => ({ orders: data.orders.nodes, pagination: data.orders.pagination }),
    response: z.object({ orders: z.array(order), pagination }),
  },
  {
    method: 'GET',
    path: '/orders/{id}',
    summary: 'Get an order with its customer, lines, payments and passes.',
    tag: 'Orders',
    organisation: true,
    operation: `query Order($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ order: data.order }),
    response: z.object({ order }),
  },
  {
    method: 'POST',
    path: '/orders/{id}/cancel',
    summary:
      'Cancel a pending or confirmed order: tickets back on sale, passes not yet redeemed void; order.cancelled. 409 when it is cancelled or refunded already.',
    tag: 'Orders',
    organisation: true,
    operation: `mutation CancelOrder($id: ID!) { cancelOrder(id: $id) { order { ${ORDER_FIELDS} } } }`,
    params: idParam,
    body: z.strictObject({}),
    bind: { id: 'params.id' },
    result: (data) => ({ order: data.cancelOrder.order }),
    response: z.object({ order }),
  },
  {
    method: 'POST',
    path: '/orders/{id}/refund',
    summary:
      'Refund a confirmed order (in full): tickets back on sale, passes not yet redeemed void; order.refunded. 409 unless confirmed.',
    tag: 'Orders',
    organisation: true,
    operation: `mutation RefundOrder($id: ID!) { refundOrder(id: $id) { order { ${ORDER_FIELDS} } } }`,
    params: idParam,
    body: z.strictObject({}),
    bind: { id: 'params.id' },
    result: (data) => ({ order: data.refundOrder.order }),
    response: z.object({ order }),
  },
  {
    method: 'GET',
    path: '/customers',
    summary: 'List customers on the accounts the caller may read, newest first; filter by email (exact, case-insensitive) or account.',
    tag: 'Orders',
    organisation: true,
    operation: `query Customers($email: String, $accountId: ID, $page: Int, $limit: Int) {
      customers(email: $email, accountId: $accountId, page: $page, limit: $limit) { nodes { ${CUSTOMER_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(listCustomersFilters),
    bind: { '...': 'query' },
    result: (data) => ({ customers: data.customers.nodes, pagination: data.customers.pagination }),
    response: z.object({ customers: z.array(customer), pagination }),
  },
  {
    method: 'GET',
    path: '/customers/{id}',
    summary: 'Get a customer.',
    tag: 'Orders',
    organisation: true,
    operation: `query Customer($id: ID!) { customer(id: $id) { ${CUSTOMER_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ customer: data.customer }),
    response: z.object({ customer }),
  },
  {
    method: 'GET',
    path: '/passes',
    summary: 'List passes on the accounts the caller may read, in issue order; filter by order, customer, occurrence, status or account.',
    tag: 'Orders',
    organisation: true,
    operation: `query Passes($orderId: ID, $customerId: ID, $occurrenceId: ID, $status: PassStatus, $accountId: ID, $page: Int, $limit: Int) {
      passes(orderId: $orderId, customerId: $customerId, occurrenceId: $occurrenceId, status: $status, accountId: $accountId, page: $page, limit: $limit) {
        nodes { ${PASS_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(listPassesFilters),
    bind: { '...': 'query' },
    result: (data) => ({ passes: data.passes.nodes, pagination: data.passes.pagination }),
    response: z.object({ passes: z.array(pass), pagination }),
  },
  {
    method: 'GET',
    path: '/passes/{id}',
    summary: 'Get a pass.',
    tag: 'Orders',
    organisation: true,
    operation: `query Pass($id: ID!) { pass(id: $id) { ${PASS_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ pass: data.pass }),
    response: z.object({ pass }),
  },
  {
    method: 'POST',
    path: '/passes/{id}/redeem',
    summary:
      'Redeem a pass at the door (scanner); ticket.redeemed. With occurrenceId, a pass for another occurrence is refused. A second scan, a void pass or a cancelled occurrence is 409 with the reason.',
    tag: 'Orders',
    organisation: true,
    operation: `mutation RedeemPass($passId: ID, $occurrenceId: ID) { redeemPass(passId: $passId, occurrenceId: $occurrenceId) { redemption { ${REDEMPTION_FIELDS} } } }`,
    params: idParam,
    body: redeemPassByIdBody,
    bind: { passId: 'params.id', '...': 'body' },
    result: (data) => ({ redemption: data.redeemPass.redemption }),
    status: 201,
    response: z.object({ redemption }),
  },
  {
    method: 'POST',
    path: '/redemptions',
    summary:
      'Redeem a pass by the code printed on it (case, spaces and hyphens ignored; optionally at occurrenceId); ticket.redeemed. A second scan, a void pass, another or a cancelled occurrence is 409.',
    tag: 'Orders',
    organisation: true,
    operation: `mutation RedeemCode($code: String, $occurrenceId: ID) { redeemPass(code: $code, occurrenceId: $occurrenceId) { redemption { ${REDEMPTION_FIELDS} } } }`,
    body: redeemPassByCodeBody,
    bind: { '...': 'body' },
    result: (data) => ({ redemption: data.redeemPass.redemption }),
    status: 201,
    response: z.object({ redemption }),
  },
];
