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

/**
 * Resources only a signed-in person may use, whatever an API key's or embed session's scopes say:
 * API keys are made, listed and revoked by people (contract.md: SIGNED_IN_USER_REQUIRED; the
 * `signedInUser` scope of schema/types/api-key.ts). Explaining a key's or session's access reads
 * this; test/platform/explain-access.test.ts checks it names exactly the fields that ask for it.
 */
export const PEOPLE_ONLY_RESOURCES: ReadonlySet<string> = new Set(['api_keys']);

export function isValidPermission(permission: string): boolean {
  return parsePermission(permission) !== undefined;
}

/** A scope string (API keys, embed sessions): `resource.action`, no account scope. */
export function isValidScope(scope: string): boolean {
  return scope.length >= 1 && scope.length <= 255 && SCOPE_PATTERN.test(scope);
}

/**
 * Where a grant comes from, so a decision can be explained (`Access.explain`): one permission of a
 * role assigned to the user on an account (its scope as written: `all`, a named account, or
 * `dynamic` = the assignment's account), or one scope of an API key or embed session.
 */
export type GrantSource =
  | {
      kind: 'role';
      /** The permission string as the role states it. */
      permission: string;
      scope: 'all' | 'account' | 'dynamic';
      assignmentId: string | null;
      roleId: string | null;
      roleName: string | null;
      /** The account the role is assigned on. */
      assignedOn: string;
    }
  | {
      kind: 'scope';
      scope: string;
      holder: 'apiKey' | 'embedSession';
      holderId: string | null;
      /** The holder's account; null for an organisation-wide key. */
      accountId: string | null;
    };

/** One right: an action on a resource, on every account or on a set of accounts, and where it comes from. */
export interface Grant {
  resource: string;
  action: string;
  accounts: 'all' | ReadonlySet<string>;
  source: GrantSource;
}

export interface RoleGrantSource {
  accountId: string;
  permissions: readonly string[];
  /** The assignment and its role, named in explanations. */
  assignmentId?: string;
  role?: { id: string; name: string };
}

/** Grants of a user from their role assignments (scope resolution happens here, once). */
export function grantsFromAssignments(assignments: readonly RoleGrantSource[]): Grant[] {
  const grants: Grant[] = [];
  for (const assignment of assignments) {
    for (const permission of assignment.permissions) {
      const parsed = parsePermission(permission);
      if (!parsed) continue;
      const accounts = parsed.scope === 'all' ? 'all' : new Set([parsed.scope === 'dynamic' ? assignment.accountId : parsed.scope]);
      const source: GrantSource = {
        kind: 'role',
        permission,
        scope: parsed.scope === 'all' || parsed.scope === 'dynamic' ? parsed.scope : 'account',
        assignmentId: assignment.assignmentId ?? null,
        roleId: assignment.role?.id ?? null,
        roleName: assignment.role?.name ?? null,
        assignedOn: assignment.accountId,
      };
      grants.push({ resource: parsed.resource, action: parsed.action, accounts, source });
    }
  }
  return grants;
}

/** Grants of an API key or embed session: its scopes, on its account or on every account. */
export function grantsFromScopes(
  scopes: readonly string[],
  accountId: string | null,
  holder: { kind: 'apiKey' | 'embedSession'; id: string | null } = { kind: 'apiKey', id: null },
): Grant[] {
  const accounts = accountId === null ? 'all' : new Set([accountId]);
  return scopes.flatMap((scope) => {
    const match = SCOPE_PATTERN.exec(scope);
    if (!match) return [];
    const source: GrantSource = { kind: 'scope', scope, holder: holder.kind, holderId: holder.id, accountId };
    return [{ resource: match[1]!, action: match[2]!, accounts, source }];
  });
}

/** The answer of `Access.explain`: the decision and the grants it rests on. */
export interface Explanation {
  resource: string;
  action: string;
  /** The account decided on; null: the organisation as a whole (every account). */
  accountId: string | null;
  allowed: boolean;
  /** The grants that cover the request (exact or wildcard); empty when denied. */
  grants: Grant[];
  /**
   * When denied: what the holder does hold near it, the same resource on that account (another
   * action) or the same right on other accounts, at most NEARBY_LIMIT.
   */
  nearby: Grant[];
}

/** How many related grants a denial names. */
export const NEARBY_LIMIT = 20;

/** What one `resource.action` is granted on: the grants on every account, and those per account they name. */
interface Reach {
  all: Grant[];
  accounts: Map<string, Grant[]>;
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
      if (!reach) this.#reach.set(key, (reach = { all: [], accounts: new Map() }));
      if (grant.accounts === 'all') reach.all.push(grant);
      else
        for (const account of grant.accounts) {
          const onAccount = reach.accounts.get(account);
          if (onAccount) onAccount.push(grant);
          else reach.accounts.set(account, [grant]);
        }
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

  /**
   * The one covering rule, for checks and explanations alike: is `resource.action` granted on
   * `accountId` (null: the organisation as a whole, which only grants on every account reach)?
   * Without `found` it stops at the first covering entry; with it, it collects every covering grant.
   */
  #decide(resource: string, action: string, accountId: string | null | undefined, found?: Grant[]): boolean {
    let allowed = false;
    for (const reach of this.#covering(resource, action)) {
      const onAccount = accountId == null ? undefined : reach.accounts.get(accountId);
      if (reach.all.length === 0 && onAccount === undefined) continue;
      if (!found) return true;
      allowed = true;
      found.push(...reach.all, ...(onAccount ?? []));
    }
    return allowed;
  }

  /** May the holder do `resource.action` on `accountId` (or, without one, on the organisation as a whole)? */
  allows(resource: string, action: string, accountId?: string | null): boolean {
    return this.#decide(resource, action, accountId);
  }

  /** May the holder do `resource.action` on at least one account? */
  allowsSomewhere(resource: string, action: string): boolean {
    for (const reach of this.#covering(resource, action)) if (reach.all.length > 0 || reach.accounts.size > 0) return true;
    return false;
  }

  /** The accounts on which `resource.action` is allowed: 'all', or a list (possibly empty). */
  accountsFor(resource: string, action: string): 'all' | string[] {
    const accounts = new Set<string>();
    for (const reach of this.#covering(resource, action)) {
      if (reach.all.length > 0) return 'all';
      for (const account of reach.accounts.keys()) accounts.add(account);
    }
    return [...accounts];
  }

  /** Everything on every account. */
  get isOrgAdmin(): boolean {
    return (this.#reach.get('*.*')?.all.length ?? 0) > 0;
  }

  /** A permission string and the account it is asked about: `:all` the organisation, `:acc_x` acc_x, dynamic `accountId`. */
  static #asked(permission: string, accountId: string | null): { resource: string; action: string; accountId: string | null } | undefined {
    const parsed = parsePermission(permission);
    if (!parsed) return undefined;
    const account = parsed.scope === 'all' ? null : parsed.scope === 'dynamic' ? accountId : parsed.scope;
    return { resource: parsed.resource, action: parsed.action, accountId: account };
  }

  /**
   * Does the holder hold `permission` (a permission string, scope resolved against `accountId`
   * for a dynamic one)? Used to refuse handing out more than one holds (roles, keys, sessions).
   */
  covers(permission: string, accountId: string | null): boolean {
    const asked = Access.#asked(permission, accountId);
    return asked !== undefined && this.#decide(asked.resource, asked.action, asked.accountId);
  }

  /**
   * Why `covers(permission, accountId)` answers what it does: the same decision with the grants it
   * rests on, or for a denial what the holder holds nearby; undefined for an invalid permission
   * string. src/services/explain-access.ts; test/platform/explain-access.test.ts compares it with
   * the outcome of real requests.
   */
  explain(permission: string, accountId: string | null): Explanation | undefined {
    const asked = Access.#asked(permission, accountId);
    if (!asked) return undefined;
    const grants: Grant[] = [];
    const allowed = this.#decide(asked.resource, asked.action, asked.accountId, grants);
    return { ...asked, allowed, grants: [...new Set(grants)], nearby: allowed ? [] : this.#nearby(asked) };
  }

  /**
   * For a denial (not on the hot path, so a walk over every grant): grants of the same resource
   * that reach the account with another action, and grants of the same right on other accounts.
   */
  #nearby(asked: { resource: string; action: string; accountId: string | null }): Grant[] {
    const near: Grant[] = [];
    for (const grant of this.grants) {
      if (grant.resource !== asked.resource && grant.resource !== '*') continue;
      const sameRight = grant.action === asked.action || grant.action === '*';
      const reaches = grant.accounts === 'all' || (asked.accountId !== null && grant.accounts.has(asked.accountId));
      if ((sameRight || reaches) && near.length < NEARBY_LIMIT) near.push(grant);
    }
    return near;
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
      const isAllAccounts = reach.all.length > 0;
      entries.push({ permission, accounts: isAllAccounts ? ['all'] : [...reach.accounts.keys()].sort(), isAllAccounts });
    }
    return entries.sort((a, b) => (a.permission < b.permission ? -1 : a.permission > b.permission ? 1 : 0));
  }
}
