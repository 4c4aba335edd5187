import { describe, expect, it } from 'vitest';
import {
  API_VERSIONS,
  CURRENT_VERSION,
  declareVersion,
  deprecationHeaders,
  describeChange,
  transformDown,
  upgradeInput,
} from './versions.ts';

describe('version declarations', () => {
  it('describe themselves for GET /meta/versions', () => {
    expect(describeChange({ kind: 'renamed', resource: 'Order', from: 'total', to: 'totalAmount' })).toBe(
      'Order: total renamed totalAmount',
    );
    expect(describeChange({ kind: 'added', resource: 'Event', field: 'venueId', note: 'null when none' })).toBe(
      'Event: venueId added (null when none)',
    );
    expect(describeChange({ kind: 'removed', resource: 'Customer', field: 'phone', restore: () => null })).toBe('Customer: phone removed');
    expect(API_VERSIONS.find((v) => v.date === '2025-10-01')?.breakingChanges).toContain('Order: total renamed totalAmount');
  });

  it('take a resource down one version at a time, keeping a renamed field in its place', () => {
    const order = { id: 'ord_1', currency: 'GBP', subtotalAmount: 5, totalAmount: 7, lineItemCount: 2, status: 'pending' };
    expect(transformDown('Order', order, CURRENT_VERSION)).toBe(order);
    expect(Object.keys(transformDown('Order', order, '2025-10-01'))).toEqual(['id', 'currency', 'subtotalAmount', 'totalAmount', 'status']);
    expect(Object.entries(transformDown('Order', order, '2025-04-01'))).toEqual([
      ['id', 'ord_1'],
      ['currency', 'GBP'],
      ['subtotal', 5],
      ['total', 7],
      ['status', 'pending'],
    ]);
    // Other resources are left alone.
    expect(transformDown('Customer', { id: 'cus_1', totalAmount: 1 }, '2025-04-01')).toEqual({ id: 'cus_1', totalAmount: 1 });
    expect(() => transformDown('Order', order, '2099-01-01')).toThrow();
  });

  it('upgrade nothing without a renamed input field in between', () => {
    const body = { name: 'x', total: 3 };
    expect(upgradeInput('Order', body, '2025-04-01')).toEqual(body);
  });

  it('mark a deprecated version’s responses, not a supported one’s', () => {
    expect(deprecationHeaders('2025-04-01', '/v1/meta/versions')).toEqual({
      Deprecation: '@1759276800',
      Sunset: 'Thu, 01 Apr 2027 00:00:00 GMT',
      Link: '</v1/meta/versions>; rel="deprecation"; type="application/json"',
    });
    expect(deprecationHeaders('2025-10-01', '/v1/meta/versions')).toEqual({});
  });

  it('2026-11-27 is current, adding sequence to every resource; 2026-06-01 is supported', () => {
    expect(API_VERSIONS.map((v) => [v.date, v.status])).toEqual([
      ['2024-11-01', 'sunset'],
      ['2025-04-01', 'deprecated'],
      ['2025-10-01', 'supported'],
      ['2026-06-01', 'supported'],
      ['2026-11-27', 'current'],
    ]);
    expect(CURRENT_VERSION).toBe('2026-11-27');
    for (const resource of ['Order', 'Customer', 'Event', 'TicketsIssued', 'Redemption'] as const) {
      const shown = { id: 'x_1', accountId: 'acc_1', sequence: 3 };
      expect(transformDown(resource, shown, CURRENT_VERSION)).toEqual(shown);
      expect(transformDown(resource, shown, '2026-06-01')).toEqual({ id: 'x_1', accountId: 'acc_1' });
      expect(transformDown(resource, shown, '2025-04-01')).not.toHaveProperty('sequence');
    }
  });

  // Last: it makes a new current version for the rest of this file.
  it('restore a removed field for older versions, and read an old body’s renamed input under its new name', () => {
    declareVersion({
      date: '2099-01-01',
      summary: 'Test',
      changes: [
        { kind: 'removed', resource: 'Customer', field: 'fullName', restore: (c) => `${c.firstName as string} ${c.lastName as string}` },
        { kind: 'renamed', resource: 'Customer', from: 'mail', to: 'email', input: true },
      ],
      deprecatedAt: null,
      sunsetAt: null,
    });
    expect(CURRENT_VERSION).toBe('2099-01-01');
    const customer = { id: 'cus_1', email: 'a@b.c', firstName: 'Ada', lastName: 'L' };
    expect(transformDown('Customer', customer, '2026-06-01')).toEqual({
      id: 'cus_1',
      mail: 'a@b.c',
      firstName: 'Ada',
      lastName: 'L',
      fullName: 'Ada L',
    });
    expect(upgradeInput('Customer', { mail: 'x@y.z' }, '2025-04-01')).toEqual({ email: 'x@y.z' });
    // A body with both names keeps the new one; the old one is left for validation to refuse.
    expect(upgradeInput('Customer', { mail: 'x@y.z', email: 'n@y.z' }, '2026-06-01')).toEqual({ mail: 'x@y.z', email: 'n@y.z' });
    expect(() => declareVersion({ date: '2098-01-01', summary: 'older', changes: [], deprecatedAt: null, sunsetAt: null })).toThrow();
  });
});
