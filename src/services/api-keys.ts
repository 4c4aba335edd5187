import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import { mintKey, sha256 } from '../auth/keys.ts';
import { assertMayGrant } from '../auth/granting.ts';
import { isValidScope } from '../auth/permissions.ts';
import { LIMITS, limitedArray } from '../limits/limits.ts';
import { instant } from '../time-zones.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { reference, validate, type Raw } from '../validation.ts';
import type { ApiKey, Prisma } from '../generated/prisma/client.ts';
import { changedSince, NEWEST_FIRST, type PolledListArgs, paginate } from '../pagination.ts';
import { audited, changesBetween, auditedChange } from './audit.ts';

export const scopeList = limitedArray(
  z.string().refine(isValidScope, { error: (issue) => `"${String(issue.input).slice(0, 300)}" is not a scope (resource.action)` }),
  'idsPerRequest',
  `at most ${LIMITS.idsPerRequest} scopes`,
).pipe(z.array(z.string()).min(1, 'at least 1 scope'));

export const createApiKeyInput = z.strictObject({
  name: z.string().trim().min(1).max(255),
  scopes: scopeList,
  accountId: reference.nullish(),
  // An instant as every other one is read (Z or an offset, nothing a parser might guess at).
  expiresAt: instant
    .refine((date) => date.getTime() > Date.now(), 'must be in the future')
    .describe('An ISO 8601 instant in the future.')
    .nullish(),
});

/** The staff user behind a request; API keys and embed tokens never reach these operations. */
function staffUserId(ctx: RequestContext): string {
  if (ctx.principal?.kind !== 'staff' || !ctx.principal.userId) throw new AppError('SIGNED_IN_USER_REQUIRED');
  return ctx.principal.userId;
}

/**
 * Creates an organisation API key: `svak_` + 32 random bytes, stored only as its SHA-256. The
 * creator needs api_keys.write where the key applies and must hold every scope it grants there.
 */
export async function createApiKey(ctx: RequestContext, raw: Record<string, unknown>) {
  const createdBy = staffUserId(ctx);
  const input = validate(createApiKeyInput, raw);
  const accountId = input.accountId ?? null;
  if (accountId) {
    const account = await ctx.db.account.findFirst({ where: { id: accountId, isDeleted: false }, select: { id: true } });
    if (!account) throw AppError.unknownReferences([{ path: 'accountId', message: 'No such account in this organisation.' }]);
  }
  if (!ctx.access.allows('api_keys', 'write', accountId)) {
    throw new AppError(
      'FORBIDDEN',
      accountId ? 'You cannot create API keys for this account.' : 'Organisation-wide API keys need api_keys.write on every account.',
    );
  }
  // A key's scopes apply on its account, or on every account for an organisation-wide key.
  assertMayGrant(ctx, accountId ? input.scopes : input.scopes.map((scope) => `${scope}:all`), accountId, 'these scopes', 'scopes');

  const { key, keyHash, keyPrefix } = mintKey('svak_');
  const apiKey = await audited(
    ctx,
    (tx) =>
      tx.apiKey.create({
        data: {
          id: newId('apiKey'),
          organisationId: ctx.organisation!.id,
          accountId,
          name: input.name,
          keyHash,
          keyPrefix,
          scopes: [...new Set(input.scopes)],
          createdById: createdBy,
          expiresAt: input.expiresAt ?? null,
        },
      }),
    (created) => ({ action: 'api_key.created', targetId: created.id, accountId, changes: changesBetween(null, created) }),
  );
  return { apiKey, key };
}

/** Where a key stands: it authenticates until it is revoked or its expiry passes. */
export const API_KEY_STATUSES = ['active', 'revoked', 'expired'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

/** A revoked key is revoked whether or not its expiry passed since. */
export function apiKeyStatus(key: Pick<ApiKey, 'revokedAt' | 'expiresAt'>, now = Date.now()): ApiKeyStatus {
  if (key.revokedAt) return 'revoked';
  return key.expiresAt && key.expiresAt.getTime() <= now ? 'expired' : 'active';
}

/** The same standing as a condition, so the list filters by it in its statement. */
function standing(status: ApiKeyStatus | null | undefined, now = new Date()): Prisma.ApiKeyWhereInput {
  if (status === 'revoked') return { revokedAt: { not: null } };
  if (status === 'expired') return { revokedAt: null, expiresAt: { lte: now } };
  if (status === 'active') return { revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
  return {};
}

const apiKeyFilters = z.object({ status: z.enum(API_KEY_STATUSES).nullish() });

/**
 * Keys the caller may see: every key with org-wide api_keys.read, else those of their accounts;
 * optionally only those that stand so now.
 */
export function listApiKeys(ctx: RequestContext, args: PolledListArgs & Raw<z.input<typeof apiKeyFilters>> = {}) {
  staffUserId(ctx);
  const { updatedSince, status, ...page } = args;
  const accounts = ctx.access.accountsFor('api_keys', 'read');
  // Conditions side by side (AND): both the poll and the standing may be alternatives (OR).
  const where: Prisma.ApiKeyWhereInput = {
    AND: [
      accounts === 'all' ? {} : { accountId: { in: accounts } },
      // A key records each of its changes in its own column: made, used (to within 10 s) or revoked.
      changedSince(updatedSince, ['createdAt', 'lastUsedAt', 'revokedAt']),
      standing(validate(apiKeyFilters, { status }).status),
    ],
  };
  return paginate(
    page,
    NEWEST_FIRST,
    (keyset) => ctx.db.apiKey.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.apiKey.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

/** One key the caller may see (as listApiKeys sees it); any other id is NOT_FOUND. */
export async function getApiKey(ctx: RequestContext, id: string) {
  staffUserId(ctx);
  const apiKey = await ctx.db.apiKey.findUnique({ where: { id } });
  if (!apiKey || !ctx.access.allows('api_keys', 'read', apiKey.accountId)) throw AppError.notFound('API key not found.');
  return apiKey;
}

/** Revokes a key (idempotent: revoking a revoked key answers it unchanged). */
export async function revokeApiKey(ctx: RequestContext, id: string) {
  staffUserId(ctx);
  const apiKey = await ctx.db.apiKey.findUnique({ where: { id } });
  if (!apiKey || !ctx.access.allows('api_keys', 'read', apiKey.accountId)) throw AppError.notFound('API key not found.');
  if (!ctx.access.allows('api_keys', 'write', apiKey.accountId)) throw new AppError('FORBIDDEN');
  if (apiKey.revokedAt) return apiKey;
  // Of two revocations at once, the second finds the key revoked and records nothing.
  const revoked = await auditedChange(
    ctx,
    { table: 'api_keys', id, read: (tx) => tx.apiKey.findUnique({ where: { id } }) },
    async (tx, before) => (before.revokedAt ? before : tx.apiKey.update({ where: { id }, data: { revokedAt: new Date() } })),
    (after, before) =>
      before.revokedAt
        ? null
        : { action: 'api_key.revoked', targetId: id, accountId: after.accountId, changes: changesBetween(before, after) },
  );
  forgetCachedAccess(ctx);
  return revoked;
}

export { sha256 };
