import type { Database } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { Organisation } from '../generated/prisma/client.ts';
import { API_KEY_TABLES, AuthCache, CUSTOMER_TABLES, ORGANISATION_TABLES, STAFF_TABLES } from './auth-cache.ts';
import { authenticateChannelKey, isChannelKey, SALES_API_TAKES_CHANNEL_KEYS, sameChannel } from './channel-keys.ts';
import { sha256 } from './keys.ts';
import { lastUseDue } from './last-use.ts';
import { Access, grantsFromAssignments, grantsFromScopes } from './permissions.ts';
import type { Authentication, Principal } from './principal.ts';
import type { TokenService } from './tokens.ts';

export type { Authentication, Principal } from './principal.ts';

/**
 * Who is calling and for which organisation. A credential that is present but not good is
 * refused here (401/403) whatever the route; a missing credential is not an error here (public
 * fields exist), the scopes of each field decide.
 */
export async function authenticate(
  db: Database,
  tokens: TokenService,
  headers: {
    authorization: string | undefined;
    /** X-Channel-Key (sales API only): a channel key, alone or beside a customer token. */
    channelKey?: string | undefined;
    organisationSlug: string | null;
    /** Management (/graphql, /v1) refuses channel keys outright; the sales API (/live) takes them. */
    surface?: 'management' | 'sales';
  },
  cache: AuthCache = new AuthCache(0),
): Promise<Authentication> {
  const { surface = 'management', channelKey } = headers;
  const fromAuthorization = await authenticateAuthorization(db, tokens, headers, cache);
  if (surface !== 'sales' || !channelKey?.trim()) return fromAuthorization;
  return withChannelKeyHeader(db, cache, fromAuthorization, channelKey.trim(), headers.organisationSlug);
}

/**
 * The sales API takes the key in X-Channel-Key too. A management credential beside it is refused,
 * and so are two different keys. A customer token in Authorization with a key of the same account
 * in X-Channel-Key is a signed-in shopper: the key's channel acts, carrying the customer (checkout
 * without an email uses them; GET /sales/me/orders works too).
 */
async function withChannelKeyHeader(
  db: Database,
  cache: AuthCache,
  fromAuthorization: Authentication,
  header: string,
  organisationSlug: string | null,
): Promise<Authentication> {
  const current = fromAuthorization.principal;
  const customer = current?.kind === 'customer' ? current : undefined;
  if (current && current.kind !== 'channel' && !customer) throw new AppError('UNAUTHENTICATED', SALES_API_TAKES_CHANNEL_KEYS);
  const authentication = await authenticateChannelKey(db, cache, header, organisationSlug);
  let principal = authentication.principal!;
  if (customer && principal.kind === 'channel') {
    if (principal.accountId !== customer.accountId || authentication.organisation!.id !== fromAuthorization.organisation?.id) {
      throw new AppError('UNAUTHENTICATED', 'The customer token and the channel key belong to different accounts.');
    }
    principal = sameChannel(principal, { ...principal, customerId: customer.customerId });
  }
  if (current?.kind === 'channel' && principal.kind === 'channel' && current.channelKeyId !== principal.channelKeyId) {
    throw new AppError('UNAUTHENTICATED', 'Authorization and X-Channel-Key carry different channel keys.');
  }
  return { ...authentication, principal };
}

async function authenticateAuthorization(
  db: Database,
  tokens: TokenService,
  headers: { authorization: string | undefined; organisationSlug: string | null; surface?: 'management' | 'sales' },
  cache: AuthCache,
): Promise<Authentication> {
  const { authorization, organisationSlug, surface = 'management' } = headers;
  if (!authorization) {
    const organisation = organisationSlug ? await organisationBySlug(db, cache, organisationSlug) : null;
    return { principal: null, organisation, access: Access.none() };
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw new AppError('UNAUTHENTICATED', 'The Authorization header must be "Bearer <token>".');
  const credential = match[1]!;

  if (credential.startsWith('svak_')) return authenticateApiKey(db, cache, credential, organisationSlug);
  if (isChannelKey(credential)) {
    if (surface === 'management') throw new AppError('UNAUTHENTICATED', 'Channel keys authenticate the sales API only.');
    return authenticateChannelKey(db, cache, credential, organisationSlug);
  }
  const claims = await tokens.verify(credential);
  if (claims.typ === 'customer') {
    if (surface === 'management') throw new AppError('UNAUTHENTICATED', 'Customer tokens authenticate the sales API only.');
    return authenticateCustomer(db, cache, claims.sub, claims.org, organisationSlug);
  }
  if (claims.typ === 'embed') return authenticateEmbed(db, cache, claims.sub, organisationSlug);
  return authenticateStaff(db, cache, claims.sub, claims.org ?? null, organisationSlug);
}

function organisationBySlug(db: Database, cache: AuthCache, slug: string): Promise<Organisation | null> {
  return cache
    .get(
      `org:${slug}`,
      async () => {
        const organisation = await db.organisation.findUnique({ where: { slug } });
        return organisation ? { value: organisation, organisationId: organisation.id } : undefined;
      },
      ORGANISATION_TABLES,
    )
    .then((organisation) => organisation ?? null);
}

function assertSameOrganisation(organisation: Organisation, organisationSlug: string | null): void {
  if (organisationSlug !== null && organisationSlug !== organisation.slug) {
    throw new AppError('ORG_MISMATCH');
  }
}

/**
 * A key pinned to an account acts for that account only, so it stops with it: while the account is
 * inactive (not trading) and for good once it is deleted, the key answers 401 UNAUTHENTICATED (an
 * administrator reactivates the account). test/identity/account-key-lifecycle.test.ts.
 */
async function authenticateApiKey(db: Database, cache: AuthCache, key: string, organisationSlug: string | null): Promise<Authentication> {
  const keyHash = sha256(key);
  const apiKey = await cache.get(
    `key:${keyHash}`,
    async () => {
      const row = await db.apiKey.findUnique({ where: { keyHash }, include: API_KEY_INCLUDE });
      return row ? { value: row, organisationId: row.organisationId } : undefined;
    },
    API_KEY_TABLES,
  );
  if (!apiKey) throw new AppError('UNAUTHENTICATED', 'Unknown API key.');
  const now = Date.now();
  const refusal = apiKeyRefusal(apiKey, now);
  if (refusal) throw refusal;
  assertSameOrganisation(apiKey.organisation, organisationSlug);
  if (lastUseDue(apiKey.id, apiKey.lastUsedAt, now)) {
    apiKey.lastUsedAt = new Date(now);
    await db.apiKey.update({ where: { id: apiKey.id }, data: { lastUsedAt: apiKey.lastUsedAt } });
  }
  return apiKeyAuthentication(apiKey);
}

const API_KEY_INCLUDE = { organisation: true, account: { select: { isDeleted: true, status: true } } } as const;
type ApiKeyRow = NonNullable<Awaited<ReturnType<typeof findApiKey>>>;
const findApiKey = (db: Database, where: { id: string; organisationId: string }) =>
  db.apiKey.findFirst({ where, include: API_KEY_INCLUDE });

/** Why a key that exists is refused, whatever it asks for; null when it is usable. */
function apiKeyRefusal(apiKey: ApiKeyRow, now: number): AppError | null {
  if (apiKey.revokedAt) return new AppError('API_KEY_REVOKED');
  if (apiKey.expiresAt && apiKey.expiresAt.getTime() <= now) return new AppError('API_KEY_EXPIRED');
  if (apiKey.account?.isDeleted) return new AppError('UNAUTHENTICATED', 'The account of this API key was deleted.');
  if (apiKey.account && apiKey.account.status !== 'active') {
    return new AppError('UNAUTHENTICATED', 'The account of this API key is inactive; an administrator can reactivate it.');
  }
  return null;
}

function apiKeyAuthentication(apiKey: ApiKeyRow): Authentication {
  return {
    principal: { kind: 'apiKey', apiKeyId: apiKey.id, accountId: apiKey.accountId, scopes: apiKey.scopes },
    organisation: apiKey.organisation,
    access: new Access(grantsFromScopes(apiKey.scopes, apiKey.accountId, { kind: 'apiKey', id: apiKey.id })),
  };
}

/**
 * A credential of the organisation as authentication reads and judges it, without using it: its
 * principal and Access, and the refusal authentication would answer it with (a revoked key, an
 * ended embed session), or null. For "why may I?" (src/services/explain-access.ts), so the
 * explanation rests on the very Access requests are checked with. Undefined: no such credential here.
 */
export type CredentialRights = Authentication & { refusal: AppError | null };

export async function apiKeyRights(db: Database, organisationId: string, apiKeyId: string): Promise<CredentialRights | undefined> {
  const apiKey = await findApiKey(db, { id: apiKeyId, organisationId });
  return apiKey ? { ...apiKeyAuthentication(apiKey), refusal: apiKeyRefusal(apiKey, Date.now()) } : undefined;
}

export async function personRights(
  db: Database,
  cache: AuthCache,
  organisation: Organisation,
  personId: string,
): Promise<CredentialRights | undefined> {
  const person = await db.person.findUnique({ where: { id: personId }, select: { id: true, email: true } });
  if (!person) return undefined;
  const user = await userRights(db, cache, organisation.id, { personId });
  if (user) {
    const principal: Principal = { kind: 'staff', personId, userId: user.id, email: person.email, tokenOrganisationId: organisation.id };
    return { principal, organisation, access: user.access, refusal: null };
  }
  // A disabled user holds no rights here: their requests meet ORG_MISMATCH, as authentication answers them.
  const disabled = await db.user.findFirst({
    where: { organisationId: organisation.id, personId, status: 'disabled' },
    select: { id: true },
  });
  if (!disabled) return undefined;
  return {
    principal: { kind: 'staff', personId, userId: disabled.id, email: person.email, tokenOrganisationId: organisation.id },
    organisation,
    access: new Access([]),
    refusal: new AppError(
      'ORG_MISMATCH',
      'This user is disabled in the organisation: their requests are refused until an administrator enables them.',
    ),
  };
}

export async function embedSessionRights(
  db: Database,
  cache: AuthCache,
  organisationId: string,
  sessionId: string,
): Promise<CredentialRights | undefined> {
  const session = await findEmbedSession(db, sessionId);
  if (!session || session.organisationId !== organisationId) return undefined;
  return { ...embedAuthentication(session), refusal: await embedRefusal(db, cache, session) };
}

async function authenticateCustomer(
  db: Database,
  cache: AuthCache,
  customerId: string,
  organisationId: string,
  organisationSlug: string | null,
): Promise<Authentication> {
  const customer = await cache.get(
    `customer:${customerId}`,
    async () => {
      const row = await db.customer.findFirst({
        where: { id: customerId, organisationId, account: { isDeleted: false } },
        select: { id: true, accountId: true, organisation: true },
      });
      return row ? { value: row, organisationId: row.organisation.id } : undefined;
    },
    CUSTOMER_TABLES,
  );
  if (!customer) throw new AppError('UNAUTHENTICATED', 'The customer of this token no longer exists.');
  assertSameOrganisation(customer.organisation, organisationSlug);
  return {
    principal: { kind: 'customer', customerId: customer.id, accountId: customer.accountId },
    organisation: customer.organisation,
    access: Access.none(),
  };
}

/**
 * An embed session lives no longer than what minted it: it ends at once when its API key is revoked
 * or expires, its account is deleted, or the staff user who minted it is no longer active or no
 * longer holds every scope of the session on its account. Checked on every request (one indexed
 * read with its key and account; a staff minter's rights come from the cached rights lookup).
 */
async function authenticateEmbed(
  db: Database,
  cache: AuthCache,
  sessionId: string,
  organisationSlug: string | null,
): Promise<Authentication> {
  const session = await findEmbedSession(db, sessionId);
  if (!session) throw embedEnded('it expired or was revoked');
  const refusal = await embedRefusal(db, cache, session);
  if (refusal) throw refusal;
  assertSameOrganisation(session.organisation, organisationSlug);
  return embedAuthentication(session);
}

type EmbedSessionRow = NonNullable<Awaited<ReturnType<typeof findEmbedSession>>>;
const findEmbedSession = (db: Database, id: string) =>
  db.embedSession.findUnique({
    where: { id },
    include: {
      organisation: true,
      account: { select: { isDeleted: true } },
      apiKey: { select: { revokedAt: true, expiresAt: true } },
    },
  });
const embedEnded = (reason: string) => new AppError('UNAUTHENTICATED', `The embed session has ended: ${reason}.`);

/** Why an embed session that exists no longer authenticates; null while it lives. */
async function embedRefusal(db: Database, cache: AuthCache, session: EmbedSessionRow): Promise<AppError | null> {
  const now = Date.now();
  if (session.revokedAt || session.expiresAt.getTime() <= now) return embedEnded('it expired or was revoked');
  if (session.account.isDeleted) return embedEnded('its account was deleted');
  if (session.apiKey && (session.apiKey.revokedAt || (session.apiKey.expiresAt && session.apiKey.expiresAt.getTime() <= now))) {
    return embedEnded('the API key that minted it was revoked or expired');
  }
  if (session.createdById) {
    const minter = await userRights(db, cache, session.organisationId, { id: session.createdById });
    if (!minter || session.scopes.some((scope) => !minter.access.covers(scope, session.accountId))) {
      return embedEnded('the user who minted it no longer holds its scopes');
    }
  }
  return null;
}

function embedAuthentication(session: EmbedSessionRow): Authentication {
  return {
    principal: {
      kind: 'embed',
      sessionId: session.id,
      accountId: session.accountId,
      scopes: session.scopes,
      expiresAt: session.expiresAt,
    },
    organisation: session.organisation,
    access: new Access(grantsFromScopes(session.scopes, session.accountId, { kind: 'embedSession', id: session.id })),
  };
}

async function authenticateStaff(
  db: Database,
  cache: AuthCache,
  personId: string,
  tokenOrganisationId: string | null,
  organisationSlug: string | null,
): Promise<Authentication> {
  const person = await cache.get(
    `person:${personId}`,
    async () => {
      const row = await db.person.findUnique({ where: { id: personId }, select: { id: true, email: true } });
      return row ? { value: row, organisationId: '' } : undefined;
    },
    STAFF_TABLES,
  );
  if (!person) throw new AppError('UNAUTHENTICATED', 'The person of this token no longer exists.');
  const base = { kind: 'staff' as const, personId: person.id, email: person.email, tokenOrganisationId };

  if (organisationSlug === null) {
    const organisation = tokenOrganisationId ? await db.organisation.findUnique({ where: { id: tokenOrganisationId } }) : null;
    if (!organisation) return { principal: { ...base, userId: null }, organisation: null, access: Access.none() };
    return staffIn(db, cache, base, organisation);
  }
  const organisation = await organisationBySlug(db, cache, organisationSlug);
  // An organisation the person does not belong to, or one that does not exist, is "another
  // organisation than the credential's": the same answer, so slugs cannot be probed.
  if (!organisation || (tokenOrganisationId !== null && tokenOrganisationId !== organisation.id)) {
    throw new AppError('ORG_MISMATCH');
  }
  return staffIn(db, cache, base, organisation);
}

async function staffIn(
  db: Database,
  cache: AuthCache,
  base: Omit<Extract<Principal, { kind: 'staff' }>, 'userId'>,
  organisation: Organisation,
): Promise<Authentication> {
  const user = await userRights(db, cache, organisation.id, { personId: base.personId });
  if (!user) throw new AppError('ORG_MISMATCH');
  return { principal: { ...base, userId: user.id }, organisation, access: user.access };
}

/** An active user of the organisation (by user id or by person) with their rights; undefined when none. */
async function userRights(
  db: Database,
  cache: AuthCache,
  organisationId: string,
  who: { personId: string } | { id: string },
): Promise<{ id: string; access: Access } | undefined> {
  const cacheKey = 'personId' in who ? `staff:${who.personId}:${organisationId}` : `user:${who.id}:${organisationId}`;
  return cache.get(
    cacheKey,
    async () => {
      const row = await db.user.findFirst({
        where: { organisationId, status: 'active', ...who },
        select: {
          id: true,
          roleAssignments: {
            where: { role: { isDeleted: false } },
            select: { id: true, accountId: true, roleId: true, role: { select: { permissions: true, name: true } } },
          },
        },
      });
      if (!row) return undefined;
      const access = new Access(
        grantsFromAssignments(
          row.roleAssignments.map((a) => ({
            accountId: a.accountId,
            permissions: a.role.permissions,
            assignmentId: a.id,
            role: { id: a.roleId, name: a.role.name },
          })),
        ),
        new Set(row.roleAssignments.map((a) => a.roleId)),
      );
      return { value: { id: row.id, access }, organisationId };
    },
    STAFF_TABLES,
  );
}
