import { describe, expect, it } from 'vitest';
import { Access, grantsFromAssignments, grantsFromScopes, isValidPermission, parsePermission } from './permissions.ts';

describe('permission strings', () => {
  it.each([
    ['events.read', { resource: 'events', action: 'read', scope: 'dynamic' }],
    ['events.*:all', { resource: 'events', action: '*', scope: 'all' }],
    ['*.*:acc_abc123', { resource: '*', action: '*', scope: 'acc_abc123' }],
    ['ticket_types.write', { resource: 'ticket_types', action: 'write', scope: 'dynamic' }],
  ])('parses %s', (text, parsed) => {
    expect(parsePermission(text)).toEqual(parsed);
  });

  it.each([
    '',
    'events',
    'events.',
    '.read',
    'events.read:',
    'events.read:some',
    'events.read:acc_',
    'ev-ents.read',
    'events.read.x',
    `${'a'.repeat(251)}.read`,
    'events.read:acc_a-b',
  ])('refuses %j', (text) => {
    expect(isValidPermission(text)).toBe(false);
  });
});

describe('Access', () => {
  const access = new Access(
    grantsFromAssignments([
      { accountId: 'acc_a', permissions: ['events.*', 'orders.read:all'] },
      { accountId: 'acc_b', permissions: ['venues.read:acc_c'] },
    ]),
  );

  it('resolves dynamic scope to the assignment account', () => {
    expect(access.allows('events', 'write', 'acc_a')).toBe(true);
    expect(access.allows('events', 'write', 'acc_b')).toBe(false);
  });

  it('resolves :all to every account, and only :all covers organisation-wide operations', () => {
    expect(access.allows('orders', 'read', 'acc_zzz')).toBe(true);
    expect(access.allows('orders', 'read')).toBe(true);
    expect(access.allows('events', 'read')).toBe(false);
  });

  it('resolves an explicit account scope regardless of where the role is assigned', () => {
    expect(access.allows('venues', 'read', 'acc_c')).toBe(true);
    expect(access.allows('venues', 'read', 'acc_b')).toBe(false);
  });

  it('lists the accounts an action is allowed on', () => {
    expect(access.accountsFor('events', 'read')).toEqual(['acc_a']);
    expect(access.accountsFor('orders', 'read')).toBe('all');
    expect(access.accountsFor('roles', 'read')).toEqual([]);
  });

  it('knows an organisation admin', () => {
    expect(access.isOrgAdmin).toBe(false);
    expect(new Access(grantsFromAssignments([{ accountId: 'acc_a', permissions: ['*.*:all'] }])).isOrgAdmin).toBe(true);
    expect(new Access(grantsFromAssignments([{ accountId: 'acc_a', permissions: ['*.*'] }])).isOrgAdmin).toBe(false);
  });

  it('applies API key scopes to the key account, or everywhere for an organisation-wide key', () => {
    const pinned = new Access(grantsFromScopes(['events.read'], 'acc_a'));
    expect(pinned.allows('events', 'read', 'acc_a')).toBe(true);
    expect(pinned.allows('events', 'read', 'acc_b')).toBe(false);
    expect(pinned.allows('events', 'write', 'acc_a')).toBe(false);
    const wide = new Access(grantsFromScopes(['events.*'], null));
    expect(wide.allows('events', 'write', 'acc_q')).toBe(true);
  });

  it('covers a wildcard only with a wildcard, so rights cannot be escalated', () => {
    const reader = new Access(grantsFromAssignments([{ accountId: 'acc_a', permissions: ['events.read'] }]));
    expect(reader.covers('events.read', 'acc_a')).toBe(true);
    expect(reader.covers('events.*', 'acc_a')).toBe(false);
    expect(reader.covers('events.read:all', 'acc_a')).toBe(false);
    expect(reader.covers('events.read:acc_a', 'acc_b')).toBe(true);
    const admin = new Access(grantsFromAssignments([{ accountId: 'acc_a', permissions: ['*.*:all'] }]));
    expect(admin.covers('*.*:all', null)).toBe(true);
  });

  it('explains a decision by the grants that cover it, with their provenance', () => {
    const held = new Access(
      grantsFromAssignments([
        { accountId: 'acc_a', permissions: ['events.*'], assignmentId: 'uar_1', role: { id: 'rol_em', name: 'Event manager' } },
        { accountId: 'acc_b', permissions: ['*.read'], assignmentId: 'uar_2', role: { id: 'rol_v', name: 'Viewer' } },
      ]),
    );
    const allowed = held.explain('events.write', 'acc_a')!;
    expect(allowed).toMatchObject({ resource: 'events', action: 'write', accountId: 'acc_a', allowed: true, nearby: [] });
    expect(allowed.grants.map((grant) => grant.source)).toEqual([
      {
        kind: 'role',
        permission: 'events.*',
        scope: 'dynamic',
        assignmentId: 'uar_1',
        roleId: 'rol_em',
        roleName: 'Event manager',
        assignedOn: 'acc_a',
      },
    ]);
    const denied = held.explain('events.write', 'acc_b')!;
    expect(denied.allowed).toBe(false);
    expect(denied.grants).toEqual([]);
    // What is held near it: events.read there (via the wildcard *.read), events.write elsewhere.
    expect(
      denied.nearby.map((grant) => [grant.source.kind === 'role' && grant.source.roleName, [...(grant.accounts as Set<string>)]]),
    ).toEqual([
      ['Event manager', ['acc_a']],
      ['Viewer', ['acc_b']],
    ]);
  });

  it('explains exactly what covers and allows decide', () => {
    const permissions = ['events.read', 'events.*:acc_c', '*.read:all', 'orders.refund', '*.*:acc_d'];
    const held = new Access(grantsFromAssignments([{ accountId: 'acc_a', permissions }]));
    for (const asked of [
      'events.read',
      'events.write',
      'events.*',
      'orders.refund',
      'orders.*:all',
      'venues.read:all',
      'venues.write:acc_d',
      '*.*',
    ]) {
      for (const account of ['acc_a', 'acc_b', 'acc_c', 'acc_d', null]) {
        const explanation = held.explain(asked, account)!;
        expect(explanation.allowed, `${asked} on ${account}`).toBe(held.covers(asked, account));
        expect(explanation.grants.length > 0, `${asked} on ${account}`).toBe(explanation.allowed);
      }
    }
    expect(held.explain('events', 'acc_a')).toBeUndefined();
  });

  it('names the key or session a scope comes from', () => {
    const key = new Access(grantsFromScopes(['events.*'], null, { kind: 'apiKey', id: 'oak_1' }));
    expect(key.explain('events.write', 'acc_q')!.grants.map((grant) => grant.source)).toEqual([
      { kind: 'scope', scope: 'events.*', holder: 'apiKey', holderId: 'oak_1', accountId: null },
    ]);
  });

  it('answers the permissions listing with filters', () => {
    expect(access.entries()).toEqual([
      { permission: 'events.*', accounts: ['acc_a'], isAllAccounts: false },
      { permission: 'orders.read', accounts: ['all'], isAllAccounts: true },
      { permission: 'venues.read', accounts: ['acc_c'], isAllAccounts: false },
    ]);
    expect(access.entries({ resource: 'orders' }).map((e) => e.permission)).toEqual(['orders.read']);
    expect(access.entries({ action: 'write' }).map((e) => e.permission)).toEqual(['events.*']);
  });
});
