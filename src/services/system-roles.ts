/**
 * Roles every organisation is created with. They cannot be modified or deleted. Permission strings
 * follow docs/spec/service-spec.md §2: resource.action[:scope]; `:all` = every account of the organisation,
 * no scope = the account the role is assigned on.
 */
export const SYSTEM_ROLES = [
  {
    systemKey: 'organisation_admin',
    name: 'Organisation admin',
    description: 'Everything, on every account of the organisation.',
    permissions: ['*.*:all'],
  },
  {
    systemKey: 'account_admin',
    name: 'Account admin',
    description: 'Everything on the account the role is assigned on.',
    permissions: ['*.*'],
  },
  {
    systemKey: 'event_manager',
    name: 'Event manager',
    description: 'Events, venues, occurrences and ticket types; reads orders and customers; scans passes.',
    permissions: [
      'events.*',
      'venues.*',
      'occurrences.*',
      'ticket_types.*',
      'orders.read',
      'customers.read',
      'passes.read',
      'passes.redeem',
    ],
  },
  {
    systemKey: 'viewer',
    name: 'Viewer',
    description: 'Reads everything on the account the role is assigned on.',
    permissions: ['*.read'],
  },
] as const;

export type SystemRoleKey = (typeof SYSTEM_ROLES)[number]['systemKey'];
