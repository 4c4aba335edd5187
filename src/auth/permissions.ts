/**
 * Permission strings and the one evaluator every surface uses (GraphQL scopes, REST routes through
 * them, /me/permissions). docs/spec/service-spec.md §2: `resource.action[:scope]`, resource and action a word
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
      const accounts = parsed.scope === 'all' ? 'all' : new Set([parsed.scope === 'dynamic' ? assignment.accountId : parsed.scope]);
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

/** What one `resource.action` is granted on: every account, or a set of accounts. */
interface Reach {
  all: boolean;
  accounts: Set<string>;
}

/**
 * The rights of one credential, indexed by `resource.action` when built, so every check looks at
 * most at four entries (the exact pair and its wildcards) whatever the number of grants, and the
 * listing is linear: an evaluator that walks every grant per check turns thousands of grants into
 * seconds of blocked event loop.
 *
 * Wildcards: a granted `*` covers every word; a requested `*` (checking whether someone may hand
 * out `events.*`) is covered only by a granted `*`, so rights cannot be escalated through them.
 */
export class Access {
  readonly #reach = new Map<string, Reach>();

  /**
   * `heldRoles`: the roles a signed-in user holds here, on any account (a person sees the roles
   * they hold without roles.read); empty for keys and embed sessions.
   */
  constructor(
    readonly grants: readonly Grant[],
    readonly heldRoles: ReadonlySet<string> = new Set(),
  ) {
    for (const grant of grants) {
      const key = `${grant.resource}.${grant.action}`;
      let reach = this.#reach.get(key);
      if (!reach) this.#reach.set(key, (reach = { all: false, accounts: new Set() }));
      if (grant.accounts === 'all') reach.all = true;
      else if (!reach.all) for (const account of grant.accounts) reach.accounts.add(account);
    }
  }

  static none(): Access {
    return new Access([]);
  }

  /** The entries that can cover `resource.action`: exact, and each side as a wildcard. */
  *#covering(resource: string, action: string): Generator<Reach> {
    const keys = new Set([`${resource}.${action}`, `*.${action}`, `${resource}.*`, '*.*']);
    for (const key of keys) {
      const reach = this.#reach.get(key);
      if (reach) yield reach;
    }
  }

  /** May the holder do `resource.action` on `accountId` (or, without one, on the organisation as a whole)? */
  allows(resource: string, action: string, accountId?: string | null): boolean {
    for (const reach of this.#covering(resource, action)) {
      if (reach.all || (accountId != null && reach.accounts.has(accountId))) return true;
    }
    return false;
  }

  /** May the holder do `resource.action` on at least one account? */
  allowsSomewhere(resource: string, action: string): boolean {
    for (const reach of this.#covering(resource, action)) if (reach.all || reach.accounts.size > 0) return true;
    return false;
  }

  /** The accounts on which `resource.action` is allowed: 'all', or a list (possibly empty). */
  accountsFor(resource: string, action: string): 'all' | string[] {
    const accounts = new Set<string>();
    for (const reach of this.#covering(resource, action)) {
      if (reach.all) return 'all';
      for (const account of reach.accounts) accounts.add(account);
    }
    return [...accounts];
  }

  /** Everything on every account. */
  get isOrgAdmin(): boolean {
    return this.#reach.get('*.*')?.all === true;
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

  /**
   * May the holder put `permission` into a role definition? A role grants nothing until it is
   * assigned (and assigning checks `covers` on the account), so a dynamic permission needs holding
   * on at least one account; `:all` needs it on every account, `:acc_x` on acc_x.
   */
  mayDefine(permission: string): boolean {
    const parsed = parsePermission(permission);
    if (!parsed) return false;
    if (parsed.scope === 'dynamic') return this.allowsSomewhere(parsed.resource, parsed.action);
    return this.covers(permission, null);
  }

  /** The permissions response of GET /me/permissions: one entry per resource.action. */
  entries(filters: { resource?: string | null; action?: string | null } = {}): Array<{
    permission: string;
    accounts: string[];
    isAllAccounts: boolean;
  }> {
    const matches = (granted: string, requested: string | null | undefined) => !requested || granted === '*' || granted === requested;
    const entries: Array<{ permission: string; accounts: string[]; isAllAccounts: boolean }> = [];
    for (const [permission, reach] of this.#reach) {
      const [resource, action] = permission.split('.') as [string, string];
      if (!matches(resource, filters.resource) || !matches(action, filters.action)) continue;
      entries.push({ permission, accounts: reach.all ? ['all'] : [...reach.accounts].sort(), isAllAccounts: reach.all });
    }
    return entries.sort((a, b) => (a.permission < b.permission ? -1 : a.permission > b.permission ? 1 : 0));
  }
}
