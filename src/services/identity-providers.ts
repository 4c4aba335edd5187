import { z } from 'zod';
import { organisationOf, type RequestContext } from '../context.ts';
import type { TenantDatabase, TenantTransaction } from '../db/tenant.ts';
import { AppError } from '../errors.ts';
import type { IdentityProvider, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { jsonObjectWithin, validate } from '../validation.ts';
import { assertDeliverableUrl, UrlPolicyError } from '../net/url-policy.ts';
import { changedSince, paginate, type Page, type PolledListArgs } from '../pagination.ts';
import { changesBetween, recordAudit } from './audit.ts';

/**
 * Identity providers of an organisation: the OpenID providers whose tokens POST /auth/federate
 * accepts for that organisation's users (docs/spec/service-spec.md §2 "Identity provider").
 */

/** Any key not in the shape fails with its own path, so the error names the field. */
const unknownField = z.custom<never>(() => false, { error: 'Unknown field.' });

const httpUrl = z.url({ protocol: /^https?$/, error: 'Expected an http(s) URL.' }).max(2048, 'At most 2048 characters.');

const issuerUrl = httpUrl.refine((value) => {
  // Runs even when the URL check above failed (zod 4 does not abort between checks).
  const url = URL.canParse(value) ? new URL(value) : null;
  return url === null || (url.search === '' && url.hash === '');
}, 'An issuer has no query or fragment.');

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;
const emailDomain = z.string().trim().toLowerCase().regex(DOMAIN, 'Expected a domain such as example.com.');

/** RFC 6749 scope-token: printable ASCII without space, double quote or backslash. */
const scopeToken = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,255}$/, 'Expected a scope token (no spaces, 1 to 255 characters).');

const clientId = z.string().trim().min(1).max(255);

const configuration = jsonObjectWithin(16 * 1024);

export const MAX_CACHE_TTL = 86_400;

const updatableFields = {
  isEnabled: z.boolean().optional(),
  isDefault: z.boolean().optional(),
  scopes: z.array(scopeToken).max(50).optional(),
  allowedClientIds: z.array(clientId).max(50).optional(),
  emailDomain: emailDomain.nullable().optional(),
  cacheTtl: z.int().min(0).max(MAX_CACHE_TTL).optional(),
  configuration: configuration.optional(),
};

/** Body of PATCH /identity-providers/{id}: only the spec's updatable fields, all optional. */
export const updateIdentityProviderInput = z.object(updatableFields).catchall(unknownField);

const AUDIENCE_REQUIRED = 'Name the audience of the tokens: clientId or at least one allowedClientIds entry.';

/** Body of POST /identity-providers. */
export const createIdentityProviderInput = z
  .object({
    providerType: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,49}$/, 'Expected 1 to 50 letters, digits, ".", "_" or "-".'),
    issuer: issuerUrl,
    jwksUri: httpUrl,
    authorizationEndpoint: httpUrl.nullish(),
    tokenEndpoint: httpUrl.nullish(),
    tokenEndpointInternal: httpUrl.nullish(),
    userinfoEndpoint: httpUrl.nullish(),
    userinfoEndpointInternal: httpUrl.nullish(),
    jwksUriInternal: httpUrl.nullish(),
    clientId: clientId.nullish(),
    supportsPkce: z.boolean().optional(),
    ...updatableFields,
  })
  .catchall(unknownField)
  .superRefine((input, issue) => {
    if (!input.clientId && (input.allowedClientIds ?? []).length === 0) {
      issue.addIssue({ code: 'custom', path: ['clientId'], message: AUDIENCE_REQUIRED });
    }
  });

export type CreateIdentityProviderInput = z.input<typeof createIdentityProviderInput>;
export type UpdateIdentityProviderInput = z.input<typeof updateIdentityProviderInput>;

/**
 * Serialises the changes of one organisation's providers that check before they write: issuer
 * uniqueness (there is no unique index on organisationId + issuer) and the single default. Held
 * until the transaction ends.
 */
async function lockProviders(tx: { $executeRaw: TenantDatabase['$executeRaw'] }, organisationId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`identity-providers ${organisationId}`}, 0))`;
}

/** A page of the organisation's identity providers, the default first. */
export function listIdentityProviders(ctx: RequestContext, args: PolledListArgs = {}): Promise<Page<IdentityProvider>> {
  const { updatedSince, ...page } = args;
  const since = changedSince(updatedSince);
  return paginate(
    page,
    [
      ['isDefault', 'desc'],
      ['createdAt', 'asc'],
      ['id', 'asc'],
    ],
    (keyset) => ctx.db.identityProvider.count({ where: { AND: [since, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.identityProvider.findMany({ where: { AND: [since, keyset] }, orderBy, skip, take }),
  );
}

/** A provider of the request's organisation; another organisation's is simply not found. */
export async function getIdentityProvider(ctx: RequestContext, id: string): Promise<IdentityProvider> {
  const provider = await ctx.db.identityProvider.findFirst({ where: { id } });
  if (!provider) throw AppError.notFound('Identity provider not found.');
  return provider;
}

/** The provider URLs the service may fetch (or hand to browsers), each checked by the outbound URL policy. */
const OUTBOUND_URL_FIELDS = [
  'jwksUri',
  'jwksUriInternal',
  'authorizationEndpoint',
  'tokenEndpoint',
  'tokenEndpointInternal',
  'userinfoEndpoint',
  'userinfoEndpointInternal',
] as const;

/**
 * Refuses (400 naming each field) a provider URL that resolves to a private, loopback, link-local or
 * metadata address, unless IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: the same policy as webhooks, so a
 * tenant cannot point the service's fetches at its internal network. Fetches check again at
 * connection time (federate.ts), for names that resolve elsewhere later.
 */
async function assertOutboundUrls(
  ctx: RequestContext,
  input: Partial<Record<(typeof OUTBOUND_URL_FIELDS)[number], string | null>>,
): Promise<void> {
  const allowPrivate = ctx.runtime.config.IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS;
  const issues = await Promise.all(
    OUTBOUND_URL_FIELDS.map(async (field) => {
      const url = input[field];
      if (!url) return [];
      try {
        await assertDeliverableUrl(url, { allowPrivate, subject: 'The service does not send requests' });
        return [];
      } catch (error) {
        if (!(error instanceof UrlPolicyError)) throw error;
        return [{ path: field, message: error.message }];
      }
    }),
  );
  if (issues.flat().length > 0) throw AppError.validation(issues.flat());
}

/** The default provider (other than `except`) is one no longer, audited as a change of it. */
async function demoteDefault(tx: TenantTransaction, ctx: RequestContext, except?: string): Promise<void> {
  const demoted = await tx.identityProvider.updateManyAndReturn({
    where: { isDefault: true, ...(except ? { id: { not: except } } : {}) },
    data: { isDefault: false },
  });
  for (const provider of demoted) {
    await recordAudit(tx, ctx, {
      action: 'identity_provider.updated',
      targetId: provider.id,
      changes: { isDefault: { before: true, after: false } },
    });
  }
}

export async function createIdentityProvider(ctx: RequestContext, raw: unknown): Promise<IdentityProvider> {
  const input = validate(createIdentityProviderInput, raw);
  await assertOutboundUrls(ctx, input);
  const organisation = organisationOf(ctx);
  return ctx.db.$transaction(async (tx) => {
    await lockProviders(tx, organisation.id);
    const clash = await tx.identityProvider.findFirst({ where: { issuer: input.issuer }, select: { id: true } });
    if (clash) {
      throw new AppError('CONFLICT', `An identity provider with issuer ${input.issuer} already exists in this organisation.`);
    }
    if (input.isDefault) await demoteDefault(tx, ctx);
    const created = await tx.identityProvider.create({
      data: {
        id: newId('identityProvider'),
        organisationId: organisation.id,
        providerType: input.providerType,
        issuer: input.issuer,
        jwksUri: input.jwksUri,
        authorizationEndpoint: input.authorizationEndpoint ?? null,
        tokenEndpoint: input.tokenEndpoint ?? null,
        tokenEndpointInternal: input.tokenEndpointInternal ?? null,
        userinfoEndpoint: input.userinfoEndpoint ?? null,
        userinfoEndpointInternal: input.userinfoEndpointInternal ?? null,
        jwksUriInternal: input.jwksUriInternal ?? null,
        clientId: input.clientId ?? null,
        supportsPkce: input.supportsPkce ?? true,
        isEnabled: input.isEnabled ?? true,
        isDefault: input.isDefault ?? false,
        scopes: input.scopes ?? ['openid', 'email', 'profile'],
        allowedClientIds: input.allowedClientIds ?? [],
        emailDomain: input.emailDomain ?? null,
        cacheTtl: input.cacheTtl ?? 600,
        ...(input.configuration !== undefined ? { configuration: input.configuration as Prisma.InputJsonObject } : {}),
      },
    });
    await recordAudit(tx, ctx, { action: 'identity_provider.created', targetId: created.id, changes: changesBetween(null, created) });
    return created;
  });
}

/** Changes the updatable fields; isDefault=true takes the default away from every other provider. */
export async function updateIdentityProvider(ctx: RequestContext, id: string, raw: unknown): Promise<IdentityProvider> {
  const input = validate(updateIdentityProviderInput, raw);
  return ctx.db.$transaction(async (tx) => {
    // Locked for any change, so the entry's before is what this change replaced.
    await lockProviders(tx, organisationOf(ctx).id);
    const provider = await tx.identityProvider.findFirst({ where: { id } });
    if (!provider) throw AppError.notFound('Identity provider not found.');
    if (input.allowedClientIds !== undefined && input.allowedClientIds.length === 0 && !provider.clientId) {
      throw AppError.validation([{ path: 'allowedClientIds', message: AUDIENCE_REQUIRED }]);
    }
    if (input.isDefault === true) await demoteDefault(tx, ctx, id);
    const updated = await tx.identityProvider.update({
      where: { id },
      data: {
        ...(input.isEnabled !== undefined ? { isEnabled: input.isEnabled } : {}),
        ...(input.isDefault !== undefined ? { isDefault: input.isDefault } : {}),
        ...(input.scopes !== undefined ? { scopes: input.scopes } : {}),
        ...(input.allowedClientIds !== undefined ? { allowedClientIds: input.allowedClientIds } : {}),
        ...(input.emailDomain !== undefined ? { emailDomain: input.emailDomain } : {}),
        ...(input.cacheTtl !== undefined ? { cacheTtl: input.cacheTtl } : {}),
        ...(input.configuration !== undefined ? { configuration: input.configuration as Prisma.InputJsonObject } : {}),
      },
    });
    await recordAudit(tx, ctx, { action: 'identity_provider.updated', targetId: id, changes: changesBetween(provider, updated) });
    return updated;
  });
}
