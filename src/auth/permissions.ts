/**
 * Permission strings and the one evaluator every surface uses (GraphQL scopes, REST routes through
 * them, /me/permissions). Spec section 2: `resource.action[:scope]`, resource and action a word
 * (letters, digits, underscore) or `*`; scope `all` (every account of the organisation) or an
 * account id; no scope = dynamic (the account the role is assigned on); 1 to 255 characters.
 * API-key and embed scopes use the same `resource.action` form and apply to the credential's
 * account (or every account for an organisation-wide key).
 */

export const PERMISSION_PATTERN = /^([A-Za-z0-9_]+|\*)\.([A-Za-z0-9_]+|\*)(?::(all|acc_[A-Za-z0-9]+))?$/;
export const SCOPE_PATTERN = /^([A-Za-z0-9_]+|\*)\.([A-Za-z0-9_]+|\*)$/;

export interface ParsedPermission {
  resource: string;
  action: string;
  /** 'all', an account id, or 'dynamic'. */
  scope: string;
}

export function parsePermission(permission: string): ParsedPermission | undefined {
  if (permission.length < 1 || permission.length > 255) return undefined;
  const match = PERMISSION_PATTERN.exec(permission);
  if (!match) return undefined;
  return { resource: match[1]!, action: match[2]!, scope: match[3] ?? 'dynamic' };
}

export function isValidPermission(permission: string): boolean {
  return parsePermission(permission) !== undefined;
}

/** A scope string (API keys, embed sessions): `resource.action`, no account scope. */
export function isValidScope(scope: string): boolean {
  return scope.length >= 1 && scope.length <= 255 && SCOPE_PATTERN.test(scope);
}

/** One right: an action on a resource, on every account or on a set of accounts. */
export interface Grant {
  resource: string;
  action: string;
  accounts: 'all' | ReadonlySet<string>;
}

export interface RoleGrantSource {
  accountId: string;
  permissions: readonly string[];
}

/** Grants of a user from their role assignments (scope resolution happens here, once). */
export function grantsFromAssignments(assignments: readonly RoleGrantSource[]): Grant[] {
  const grants: Grant[] = [];
  for (const assignment of assignments) {
    for (const permission of assignment.permissions) {
      const parsed = parsePermission(permission);
      if (!parsed) continue;
      const accounts =
        parsed.scope === 'all' ? 'all' : new Set([parsed.scope === 'dynamic' ? assignment.accountId : parsed.scope]);
      grants.push({ resource: parsed.resource, action: parsed.action, accounts });
    }
  }
  return grants;
}

/** Grants of an API key or embed session: its scopes, on its account or on every account. */
export function grantsFromScopes(scopes: readonly string[], accountId: string | null): Grant[] {
  const accounts = accountId === null ? 'all' : new Set([accountId]);
  return scopes.flatMap((scope) => {
    const match = SCOPE_PATTERN.exec(scope);
    return match ? [{ resource: match[1]!, action: match[2]!, accounts }] : [];
  });
}

/**
 * Does a granted word cover a requested one? A granted `*` covers every word; a requested `*`
 * (checking whether someone may hand out `events.*`) is covered only by a granted `*`.
 */
function matches(granted: string, requested: string): boolean {
  return granted === '*' || granted === requested;
}

export class Access {
  constructor(readonly grants: readonly Grant[]) {}

  static none(): Access {
    return new Access([]);
  }

  /** May the holder do `resource.action` on `accountId` (or, without one, on the organisation as a whole)? */
  allows(resource: string, action: string, accountId?: string | null): boolean {
    return this.grants.some(
      (grant) =>
        matches(grant.resource, resource) &&
        matches(grant.action, action) &&
        (accountId === undefined || accountId === null
          ? grant.accounts === 'all'
          : grant.accounts === 'all' || grant.accounts.has(accountId)),
    );
  }

  /** May the holder do `resource.action` on at least one account? */
  allowsSomewhere(resource: string, action: string): boolean {
    return this.grants.some(
      (grant) =>
        matches(grant.resource, resource) &&
        matches(grant.action, action) &&
        (grant.accounts === 'all' || grant.accounts.size > 0),
    );
  }

  /** The accounts on which `resource.action` is allowed: 'all', or a list (possibly empty). */
  accountsFor(resource: string, action: string): 'all' | string[] {
    const accounts = new Set<string>();
    for (const grant of this.grants) {
      if (!matches(grant.resource, resource) || !matches(grant.action, action)) continue;
      if (grant.accounts === 'all') return 'all';
      for (const account of grant.accounts) accounts.add(account);
    }
    return [...accounts];
  }

  /** Everything on every account. */
  get isOrgAdmin(): boolean {
    return this.grants.some((grant) => grant.resource === '*' && grant.action === '*' && grant.accounts === 'all');
  }

  /**
   * Does the holder hold `permission` (a permission string, scope resolved against `accountId`
   * for a dynamic one)? Used to refuse handing out more than one holds (roles, keys, sessions).
   */
  covers(permission: string, accountId: string | null): boolean {
    const parsed = parsePermission(permission);
    if (!parsed) return false;
    const account = parsed.scope === 'all' ? null : parsed.scope === 'dynamic' ? accountId : parsed.scope;
    return this.allows(parsed.resource, parsed.action, account);
  }

  /** The permissions response of GET /me/permissions: one entry per resource.action. */
  entries(filters: { resource?: string | null; action?: string | null } = {}): Array<{
    permission: string;
    accounts: string[];
    isAllAccounts: boolean;
  }> {
    const byPermission = new Map<string, 'all' | Set<string>>();
    for (const grant of this.grants) {
      if (filters.resource && !matches(grant.resource, filters.resource)) continue;
      if (filters.action && !matches(grant.action, filters.action)) continue;
      const key = `${grant.resource}.${grant.action}`;
      const current = byPermission.get(key);
      if (current === 'all') continue;
      if (grant.accounts === 'all') byPermission.set(key, 'all');
      else byPermission.set(key, new Set([...(current ?? []), ...grant.accounts]));
    }
    return [...byPermission.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([permission, accounts]) => ({
        permission,
        accounts: accounts === 'all' ? ['all'] : [...accounts].sort(),
        isAllAccounts: accounts === 'all',
      }));
  }
}
