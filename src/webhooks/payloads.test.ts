import { describe, expect, it } from 'vitest';
import { API_VERSIONS, CURRENT_VERSION } from '../versions.ts';
import { WEBHOOK_EVENT_TYPES, WEBHOOK_TYPES, type WebhookEventType } from './event-types.ts';
import { envelope, eventData, transformDown, views } from './payloads.ts';

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

const ticketRedeemed = views.ticketRedeemed({
  redemptionId: 'red_1',
  passId: 'pas_1',
  orderId: 'ord_1',
  entitlementId: 'ent_1',
  accountId: 'acc_1',
});

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
    expect(ticketRedeemed).toStrictEqual({
      redemptionId: 'red_1',
      passId: 'pas_1',
      orderId: 'ord_1',
      entitlementId: 'ent_1',
      accountId: 'acc_1',
    });
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
  it('the current version is 2026-11-27 (these steps are written against it)', () => {
    expect(CURRENT_VERSION).toBe('2026-11-27');
  });

  it.each(Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEventType[])(
    '%s: 2026-11-27 -> 2026-06-01 drops sequence (and a redemption its orderId), nothing else',
    (type) => {
      const payload = WEBHOOK_TYPES[type].sample('acc_1', createdAt);
      const { orderId: _orderId, ...withoutOrder } = payload;
      const at202606 = type === 'ticket.redeemed' ? withoutOrder : payload;
      expect(transformDown(type, { ...payload, sequence: 4 }, '2026-06-01')).toStrictEqual(at202606);
      expect(transformDown(type, payload, '2026-06-01')).toStrictEqual(at202606);
    },
  );

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

  it('customer.created is unchanged by every step', () => {
    for (const version of ['2026-06-01', '2025-10-01', '2025-04-01']) {
      expect(transformDown('customer.created', customer, version)).toStrictEqual(customer);
    }
  });

  it('ticket.redeemed: 2026-11-27 -> 2026-06-01 drops orderId; no older step changes it', () => {
    const { orderId: _dropped, ...at202606 } = ticketRedeemed;
    for (const version of ['2026-06-01', '2025-10-01', '2025-04-01']) {
      expect(transformDown('ticket.redeemed', ticketRedeemed, version)).toStrictEqual(at202606);
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
      payloadVersion: CURRENT_VERSION,
      sequence: 2,
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
    expect(sent.data).not.toHaveProperty('sequence');
  });

  it('at the current version the payload is sent as built, its sequence last', () => {
    const sent = envelope({
      deliveryId: 'whd_2',
      type: 'event.created',
      createdAt,
      payload: event,
      payloadVersion: CURRENT_VERSION,
      sequence: 1,
      endpointVersion: CURRENT_VERSION,
    });
    expect(sent.version).toBe(CURRENT_VERSION);
    expect(sent.data).toStrictEqual({ ...event, sequence: 1 });
    expect(Object.keys(sent.data)).toEqual([...Object.keys(event), 'sequence']);
  });

  it('without a sequence (absent or null: recorded before sequences) the payload is sent as built', () => {
    for (const sequence of [undefined, null]) {
      const sent = envelope({
        deliveryId: 'whd_3',
        type: 'event.created',
        createdAt,
        payload: event,
        payloadVersion: CURRENT_VERSION,
        ...(sequence === undefined ? {} : { sequence }),
        endpointVersion: CURRENT_VERSION,
      });
      expect(sent.data).toStrictEqual(event);
    }
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
      payloadVersion: CURRENT_VERSION,
      sequence: 3,
      endpointVersion: CURRENT_VERSION,
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
      'sequence',
    ]);
    const older = envelope({
      deliveryId: 'whd_1',
      type: 'order.confirmed',
      createdAt: new Date(0),
      payload: stored,
      payloadVersion: CURRENT_VERSION,
      sequence: 3,
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

describe('eventData: what a stored event shows at a version', () => {
  const TYPES = Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEventType[];
  const sample = (type: WebhookEventType) => WEBHOOK_TYPES[type].sample('acc_1', createdAt);
  /** The versions before the one that added sequence, sunset 2024-11-01 included (endpoints pinned before it). */
  const BEFORE_SEQUENCES = API_VERSIONS.map((v) => v.date).filter((date) => date < '2026-11-27');

  it.each(TYPES)('%s at the current version: the payload as built, then its sequence, last', (type) => {
    const data = eventData({ type, payload: sample(type), version: CURRENT_VERSION, sequence: 7 }, CURRENT_VERSION);
    expect(data).toStrictEqual({ ...sample(type), sequence: 7 });
    expect(Object.keys(data)).toEqual([...Object.keys(sample(type)), 'sequence']);
  });

  it.each(TYPES)('%s at 2026-06-01 and older: no sequence, the rest as the version shows it', (type) => {
    expect(BEFORE_SEQUENCES).toEqual(['2024-11-01', '2025-04-01', '2025-10-01', '2026-06-01']);
    for (const version of BEFORE_SEQUENCES) {
      const data = eventData({ type, payload: sample(type), version: CURRENT_VERSION, sequence: 7 }, version);
      expect(data, version).not.toHaveProperty('sequence');
      expect(data, version).toStrictEqual(transformDown(type, sample(type), version));
    }
  });

  it('an event recorded before sequences has none, at any version', () => {
    for (const version of [CURRENT_VERSION, '2026-06-01', '2025-04-01']) {
      const data = eventData({ type: 'order.refunded', payload: order, version: CURRENT_VERSION, sequence: null }, version);
      expect(data).not.toHaveProperty('sequence');
      expect(data).toStrictEqual(transformDown('order.refunded', order, version));
    }
  });

  it('an event stored at an older version reads as stored at a newer one: nothing it lacks is made up', () => {
    const at202606 = transformDown('order.confirmed', order, '2026-06-01');
    expect(eventData({ type: 'order.confirmed', payload: at202606, version: '2026-06-01', sequence: null }, CURRENT_VERSION)).toStrictEqual(
      at202606,
    );
    // Two versions older: neither lineItemCount nor sequence appears.
    const at202510 = transformDown('order.confirmed', order, '2025-10-01');
    const newer = eventData({ type: 'order.confirmed', payload: at202510, version: '2025-10-01', sequence: null }, CURRENT_VERSION);
    expect(newer).toStrictEqual(at202510);
    expect(newer).not.toHaveProperty('lineItemCount');
    // And taken down from where it was stored to an older pin.
    expect(eventData({ type: 'order.confirmed', payload: at202510, version: '2025-10-01', sequence: null }, '2025-04-01')).toStrictEqual(
      transformDown('order.confirmed', order, '2025-04-01'),
    );
  });

  it('never changes the stored payload', () => {
    const payload = structuredClone(order);
    eventData({ type: 'order.created', payload, version: CURRENT_VERSION, sequence: 2 }, CURRENT_VERSION);
    eventData({ type: 'order.created', payload, version: CURRENT_VERSION, sequence: 2 }, '2025-04-01');
    expect(payload).toStrictEqual(order);
  });
});
