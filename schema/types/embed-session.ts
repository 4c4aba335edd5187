import { createEmbedSession, createEmbedSessionInput, currentEmbedSession } from '../../src/services/embed-sessions.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';

const OrganisationRef = builder.objectRef<{ id: string; slug: string }>('EmbedOrganisation').implement({
  description: 'The organisation of an embed session.',
  fields: (t) => ({
    organisationId: t.exposeID('id', { description: 'The organisation (org_).' }),
    slug: t.exposeString('slug', { description: 'The value for X-Service-Org.' }),
  }),
});

const EmbedSession = builder.objectRef<Awaited<ReturnType<typeof createEmbedSession>>>('EmbedSession').implement({
  description: 'A short-lived token for an embedded widget, pinned to one account.',
  fields: (t) => ({
    token: t.exposeString('token', { description: 'JWT to send as Authorization: Bearer.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'Expiry (at most one hour from creation).' }),
    accountId: t.exposeID('accountId', { description: 'The account the session is pinned to.' }),
    account: t.field(accountRelation('The account it is pinned to (null, with an error, where you may not read accounts).')),
    organisation: t.field({ type: OrganisationRef, description: 'Organisation (slug for X-Service-Org).', resolve: (s) => s.organisation }),
  }),
});

const CurrentEmbedSession = builder.objectRef<ReturnType<typeof currentEmbedSession>>('CurrentEmbedSession').implement({
  description: 'The embed session of the calling token.',
  fields: (t) => ({
    organisation: t.field({ type: OrganisationRef, description: 'Organisation.', resolve: (s) => s.organisation }),
    accountId: t.exposeID('accountId', { description: 'The account the session is pinned to.' }),
    account: t.field(accountRelation('The account it is pinned to (null, with an error, where you may not read accounts).')),
    scopes: t.exposeStringList('scopes', { description: 'What the session may do.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'Expiry.' }),
  }),
});

const CreateEmbedSessionInput = inputFrom('CreateEmbedSessionInput', createEmbedSessionInput, {
  description: 'A new embed session.',
  fields: {
    accountId: "The account to pin; defaults to an account-pinned API key's account.",
    scopes: "Scopes, no wider than the caller's; defaults to the API key's scopes.",
    expiresInSeconds: 'Lifetime, 60 to 3600 seconds (default 900).',
  },
});

builder.queryFields((t) => ({
  currentEmbedSession: t.field({
    type: CurrentEmbedSession,
    nullable: true,
    description: 'The embed session of the calling embed token (GET /v1/embed/sessions/current).',
    authScopes: { organisation: true },
    resolve: (_root, _args, ctx) => currentEmbedSession(ctx),
  }),
}));

builder.mutationFields((t) => ({
  createEmbedSession: t.field({
    ...payload('CreateEmbedSession', 'embedSession', EmbedSession, 'The embed session minted.'),
    description: 'Mints an embed session token (POST /v1/embed/sessions); callable with an organisation API key.',
    authScopes: { organisation: true },
    args: { input: t.arg({ type: CreateEmbedSessionInput, description: 'Options; all optional.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createEmbedSession(ctx, input ?? {})),
  }),
}));
