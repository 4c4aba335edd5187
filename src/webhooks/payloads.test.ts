import { describe, expect, it } from 'vitest';
import { CURRENT_VERSION } from '../versions.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './event-types.ts';
import { envelope, transformDown, views, type Payload } from './payloads.ts';

const createdAt = new Date('2026-07-01T12:00:00.000Z');

const order = views.order({
  id: 'ord_1',
  orderNumber: 'A-1001',
  status: 'confirmed',
  currency: 'GBP',
  totalAmount: 5250,
  subtotalAmount: 5000,
  customerId: 'cus_1',
  accountId: 'acc_1',
  createdAt,
  lineItemCount: 3,
});

const event = views.event({
  id: 'evt_1',
  name: 'Gig',
  status: 'on_sale',
  accountId: 'acc_1',
  venueId: 'vnu_1',
  timezone: 'Europe/London',
  createdAt,
});

const ticketsIssued = views.ticketsIssued({
  orderId: 'ord_1',
  accountId: 'acc_1',
  passes: [
    { id: 'pas_1', ticketTypeId: 'tkt_1', occurrenceId: 'eoc_1', status: 'issued' },
    { id: 'pas_2', ticketTypeId: 'tkt_1', occurrenceId: 'eoc_1', status: 'issued' },
  ],
});

const customer = views.customer({
  id: 'cus_1',
  email: 'a@example.com',
  firstName: 'Ada',
  lastName: 'Lovelace',
  accountId: 'acc_1',
  createdAt,
});

const ticketRedeemed = views.ticketRedeemed({ redemptionId: 'red_1', passId: 'pas_1', entitlementId: 'ent_1', accountId: 'acc_1' });

describe('views', () => {
  it('order: every field of docs/spec/service-spec.md §6, in order, dates as ISO strings', () => {
    expect(order).toStrictEqual({
      id: 'ord_1',
      orderNumber: 'A-1001',
      status: 'confirmed',
      currency: 'GBP',
      totalAmount: 5250,
      subtotalAmount: 5000,
      customerId: 'cus_1',
      accountId: 'acc_1',
      createdAt: '2026-07-01T12:00:00.000Z',
      lineItemCount: 3,
    });
  });

  it('customer: nullable names are present as null, never omitted', () => {
    const nameless = views.customer({
      id: 'cus_2',
      email: 'b@example.com',
      firstName: null,
      lastName: null,
      accountId: 'acc_1',
      createdAt,
    });
    expect(nameless).toStrictEqual({
      id: 'cus_2',
      email: 'b@example.com',
      firstName: null,
      lastName: null,
      accountId: 'acc_1',
      createdAt: '2026-07-01T12:00:00.000Z',
    });
    expect(Object.keys(customer)).toEqual(['id', 'email', 'firstName', 'lastName', 'accountId', 'createdAt']);
    // A caller passing undefined where null belongs (a loose row) still gets the key, as null.
    const loose = views.customer({
      id: 'cus_3',
      email: 'c@example.com',
      firstName: undefined as unknown as null,
      lastName: 'X',
      accountId: 'acc_1',
      createdAt,
    });
    expect(loose).toHaveProperty('firstName', null);
  });

  it('event: venueId is present as null when there is no venue', () => {
    expect(event).toStrictEqual({
      id: 'evt_1',
      name: 'Gig',
      status: 'on_sale',
      accountId: 'acc_1',
      venueId: 'vnu_1',
      timezone: 'Europe/London',
      createdAt: '2026-07-01T12:00:00.000Z',
    });
    const noVenue = views.event({
      id: 'evt_2',
      name: 'x',
      status: 'draft',
      accountId: 'acc_1',
      venueId: null,
      timezone: 'UTC',
      createdAt: '2026-07-01T12:00:00Z',
    });
    expect(noVenue).toHaveProperty('venueId', null);
    expect(noVenue.createdAt).toBe('2026-07-01T12:00:00.000Z');
  });

  it('tickets issued: passCount counts the passes; pass entries carry exactly their four fields', () => {
    expect(ticketsIssued).toStrictEqual({
      orderId: 'ord_1',
      accountId: 'acc_1',
      passCount: 2,
      passes: [
        { id: 'pas_1', ticketTypeId: 'tkt_1', occurrenceId: 'eoc_1', status: 'issued' },
        { id: 'pas_2', ticketTypeId: 'tkt_1', occurrenceId: 'eoc_1', status: 'issued' },
      ],
    });
    expect(views.ticketsIssued({ orderId: 'ord_2', accountId: 'acc_1', passes: [] })).toMatchObject({ passCount: 0, passes: [] });
  });

  it('ticket redeemed', () => {
    expect(ticketRedeemed).toStrictEqual({ redemptionId: 'red_1', passId: 'pas_1', entitlementId: 'ent_1', accountId: 'acc_1' });
  });

  it('nothing beyond the view leaks: extra properties of the source row are dropped', () => {
    const row = {
      id: 'evt_3',
      name: 'x',
      status: 'draft',
      accountId: 'acc_1',
      venueId: null,
      timezone: 'UTC',
      createdAt,
      secretNotes: 'internal',
      organisationId: 'org_1',
    };
    expect(Object.keys(views.event(row))).toEqual(['id', 'name', 'status', 'accountId', 'venueId', 'timezone', 'createdAt']);
  });
});

const ORDER_TYPES: WebhookEventType[] = ['order.created', 'order.confirmed', 'order.cancelled', 'order.refunded'];

describe('down-transforms, one step at a time', () => {
  it('the current version is 2026-06-01 (these steps are written against it)', () => {
    expect(CURRENT_VERSION).toBe('2026-06-01');
  });

  it.each(ORDER_TYPES)('%s: 2026-06-01 -> 2025-10-01 drops lineItemCount', (type) => {
    const down = transformDown(type, order, '2025-10-01');
    expect(down).toStrictEqual({
      id: 'ord_1',
      orderNumber: 'A-1001',
      status: 'confirmed',
      currency: 'GBP',
      totalAmount: 5250,
      subtotalAmount: 5000,
      customerId: 'cus_1',
      accountId: 'acc_1',
      createdAt: '2026-07-01T12:00:00.000Z',
    });
  });

  it.each(ORDER_TYPES)('%s: 2025-10-01 -> 2025-04-01 renames totalAmount/subtotalAmount back to total/subtotal, in place', (type) => {
    const at202510 = transformDown(type, order, '2025-10-01');
    const down = transformDown(type, at202510, '2025-04-01', '2025-10-01');
    expect(down).toStrictEqual({
      id: 'ord_1',
      orderNumber: 'A-1001',
      status: 'confirmed',
      currency: 'GBP',
      total: 5250,
      subtotal: 5000,
      customerId: 'cus_1',
      accountId: 'acc_1',
      createdAt: '2026-07-01T12:00:00.000Z',
    });
    expect(Object.keys(down)).toEqual([
      'id',
      'orderNumber',
      'status',
      'currency',
      'total',
      'subtotal',
      'customerId',
      'accountId',
      'createdAt',
    ]);
    expect(transformDown(type, order, '2025-04-01')).toStrictEqual(down);
  });

  it('event.created: 2026-06-01 -> 2025-10-01 drops venueId; 2025-10-01 -> 2025-04-01 changes nothing', () => {
    const at202510 = transformDown('event.created', event, '2025-10-01');
    expect(at202510).toStrictEqual({
      id: 'evt_1',
      name: 'Gig',
      status: 'on_sale',
      accountId: 'acc_1',
      timezone: 'Europe/London',
      createdAt: '2026-07-01T12:00:00.000Z',
    });
    expect(transformDown('event.created', at202510, '2025-04-01', '2025-10-01')).toStrictEqual(at202510);
  });

  it('ticket.issued: 2026-06-01 -> 2025-10-01 changes nothing; 2025-10-01 -> 2025-04-01 drops passCount', () => {
    const at202510 = transformDown('ticket.issued', ticketsIssued, '2025-10-01');
    expect(at202510).toStrictEqual(ticketsIssued);
    const at202504 = transformDown('ticket.issued', at202510, '2025-04-01', '2025-10-01');
    const { passCount: _dropped, ...rest } = ticketsIssued;
    expect(at202504).toStrictEqual(rest);
  });

  it.each([
    ['customer.created', customer],
    ['ticket.redeemed', ticketRedeemed],
  ] as Array<[WebhookEventType, Payload]>)('%s is unchanged by every step', (type, payload) => {
    for (const version of ['2026-06-01', '2025-10-01', '2025-04-01']) {
      expect(transformDown(type, payload, version)).toStrictEqual(payload);
    }
  });

  it("event.created and ticket.issued are not touched by the other types' steps", () => {
    expect(transformDown('event.created', event, '2025-04-01')).not.toHaveProperty('total');
    expect(transformDown('ticket.issued', ticketsIssued, '2025-04-01')).not.toHaveProperty('lineItemCount');
  });

  it('to the same version is the identity, and never mutates its input', () => {
    const copy = structuredClone(order);
    expect(transformDown('order.created', order, CURRENT_VERSION)).toStrictEqual(order);
    transformDown('order.created', order, '2025-04-01');
    transformDown('ticket.issued', ticketsIssued, '2025-04-01');
    expect(order).toStrictEqual(copy);
    expect(ticketsIssued.passCount).toBe(2);
  });

  it('refuses an up-transform and an unknown version', () => {
    expect(() => transformDown('order.created', transformDown('order.created', order, '2025-10-01'), '2026-06-01', '2025-10-01')).toThrow(
      /cannot transform/,
    );
    expect(() => transformDown('order.created', order, '2030-01-01')).toThrow(/cannot transform/);
    expect(() => transformDown('order.created', order, 'latest')).toThrow(/cannot transform/);
  });

  it('2025-04-01 -> 2024-11-01 (sunset, kept for endpoints pinned before it) changes nothing', () => {
    expect(transformDown('order.created', order, '2024-11-01')).toStrictEqual(transformDown('order.created', order, '2025-04-01'));
  });

  it('covers every event type', () => {
    for (const type of Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEventType[]) {
      expect(() => transformDown(type, {}, '2025-04-01')).not.toThrow();
    }
  });
});

describe('envelope', () => {
  it('stamps the endpoint version and carries the payload transformed down to it', () => {
    const sent = envelope({
      deliveryId: 'whd_1',
      type: 'order.confirmed',
      createdAt,
      payload: order,
      payloadVersion: '2026-06-01',
      endpointVersion: '2025-04-01',
    });
    expect(sent).toStrictEqual({
      id: 'whd_1',
      type: 'order.confirmed',
      version: '2025-04-01',
      createdAt: '2026-07-01T12:00:00.000Z',
      data: transformDown('order.confirmed', order, '2025-04-01'),
    });
    expect(sent.data).toHaveProperty('total', 5250);
  });

  it('at the current version the payload is sent as built', () => {
    const sent = envelope({
      deliveryId: 'whd_2',
      type: 'event.created',
      createdAt,
      payload: event,
      payloadVersion: CURRENT_VERSION,
      endpointVersion: CURRENT_VERSION,
    });
    expect(sent.version).toBe('2026-06-01');
    expect(sent.data).toStrictEqual(event);
  });
});

describe('field order', () => {
  it('an envelope lists data fields in the view order whatever order they were stored in', async () => {
    const { envelope } = await import('./payloads.ts');
    const stored = {
      status: 'confirmed',
      id: 'ord_1',
      accountId: 'acc_1',
      currency: 'EUR',
      createdAt: '2026-01-01T00:00:00.000Z',
      customerId: 'cus_1',
      orderNumber: 'A-1',
      totalAmount: 1200,
      lineItemCount: 2,
      subtotalAmount: 1000,
    };
    const built = envelope({
      deliveryId: 'whd_1',
      type: 'order.confirmed',
      createdAt: new Date(0),
      payload: stored,
      payloadVersion: '2026-06-01',
      endpointVersion: '2026-06-01',
    });
    expect(Object.keys(built.data)).toEqual([
      'id',
      'orderNumber',
      'status',
      'currency',
      'totalAmount',
      'subtotalAmount',
      'customerId',
      'accountId',
      'createdAt',
      'lineItemCount',
    ]);
    const older = envelope({
      deliveryId: 'whd_1',
      type: 'order.confirmed',
      createdAt: new Date(0),
      payload: stored,
      payloadVersion: '2026-06-01',
      endpointVersion: '2025-04-01',
    });
    expect(Object.keys(older.data)).toEqual([
      'id',
      'orderNumber',
      'status',
      'currency',
      'total',
      'subtotal',
      'customerId',
      'accountId',
      'createdAt',
    ]);
  });
});
