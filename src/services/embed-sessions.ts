import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { scopeList } from './api-keys.ts';
import { reference, validate } from '../validation.ts';
import { missingRight } from '../auth/refusal.ts';
import { assertMayGrant } from '../auth/granting.ts';
import { audited, changesBetween } from './audit.ts';

/** Embed tokens live at most one hour (spec: short-lived); 15 minutes unless asked. */
export const EMBED_MAX_TTL_SECONDS = 3600;
export const EMBED_DEFAULT_TTL_SECONDS = 900;

export const createEmbedSessionInput = z.strictObject({
  accountId: reference.nullish(),
  scopes: scopeList.nullish(),
  expiresInSeconds: z.number().int().min(60).max(EMBED_MAX_TTL_SECONDS).nullish(),
});

/**
 * Mints an embed session: a JWT pinned to one account, with scopes no wider than the caller's on
 * that account. An API key pinned to an account mints for that account only.
 */
export async function createEmbedSession(ctx: RequestContext, raw: Record<string, unknown>) {
  const principal = ctx.principal;
  if (!principal || principal.kind === 'embed') throw new AppError('NOT_FOUND', 'Embed tokens cannot mint embed sessions.');
  const input = validate(createEmbedSessionInput, raw);
  const accountId = input.accountId ?? (principal.kind === 'apiKey' ? principal.accountId : null);
  if (!accountId) throw AppError.validation([{ path: 'accountId', message: 'Required: the account the session is pinned to.' }]);
  if (principal.kind === 'apiKey' && principal.accountId && principal.accountId !== accountId) throw missingRight(ctx);
  const account = await ctx.db.account.findFirst({ where: { id: accountId, isDeleted: false }, select: { id: true } });
  if (!account) throw AppError.unknownReferences([{ path: 'accountId', message: 'No such account in this organisation.' }]);

  const held = principal.kind === 'apiKey' ? principal.scopes : undefined;
  const scopes = [...new Set(input.scopes ?? held ?? [])];
  if (scopes.length === 0) throw AppError.validation([{ path: 'scopes', message: 'at least 1 scope' }]);
  assertMayGrant(ctx, scopes, accountId, 'an embed session these scopes', 'scopes');

  const expiresAt = new Date(Date.now() + (input.expiresInSeconds ?? EMBED_DEFAULT_TTL_SECONDS) * 1000);
  const session = await audited(
    ctx,
    (tx) =>
      tx.embedSession.create({
        data: {
          id: newId('embedSession'),
          organisationId: ctx.organisation!.id,
          accountId,
          apiKeyId: principal.kind === 'apiKey' ? principal.apiKeyId : null,
          createdById: principal.kind === 'staff' ? principal.userId : null,
          scopes,
          expiresAt,
        },
      }),
    (created) => ({ action: 'embed_session.created', targetId: created.id, accountId, changes: changesBetween(null, created) }),
  );
  const token = await ctx.runtime.tokens.sign(
    { typ: 'embed', sub: session.id, org: ctx.organisation!.id, acc: accountId, scopes },
    expiresAt,
  );
  return {
    token,
    expiresAt,
    accountId,
    organisation: { id: ctx.organisation!.id, slug: ctx.organisation!.slug },
  };
}

export function currentEmbedSession(ctx: RequestContext) {
  const principal = ctx.principal;
  if (principal?.kind !== 'embed') throw new AppError('NOT_FOUND', 'This request does not carry an embed session token.');
  return {
    organisation: { id: ctx.organisation!.id, slug: ctx.organisation!.slug },
    accountId: principal.accountId,
    scopes: principal.scopes,
    expiresAt: principal.expiresAt,
  };
}
