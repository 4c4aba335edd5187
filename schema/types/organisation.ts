import { getOrganisation, updateOrganisation, updateOrganisationInput } from '../../src/services/organisation.ts';
import type { RequestContext } from '../../src/context.ts';
import { related } from '../../src/services/related.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';

export const Organisation = builder.prismaObject('Organisation', {
  interfaces: [Node],
  description: 'A tenant of the service: a ticketing company with its accounts, users and settings.',
  authScopes: (_organisation, ctx) => ctx.access.allowsSomewhere('organisation', 'read') || ctx.access.allows('organisation', 'write'),
  fields: (t) => ({
    slug: t.exposeString('slug', { description: 'The value for X-Service-Org.' }),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    primaryColor: t.expose('primaryColor', {
      type: 'HexColorCode',
      nullable: true,
      description: 'Brand colour, # and six hex digits, or null.',
    }),
    secondaryColor: t.expose('secondaryColor', {
      type: 'HexColorCode',
      nullable: true,
      description: 'Brand colour, # and six hex digits, or null.',
    }),
    logoUrl: t.expose('logoUrl', { type: 'URL', nullable: true, description: 'Logo URI, or null.' }),
    metadata: t.field({
      type: 'JSONObject',
      nullable: true,
      description: 'Free-form keys, or null.',
      resolve: (o) => (o.metadata ?? null) as Record<string, unknown> | null,
    }),
    apiVersion: t.exposeString('apiVersion', { description: 'Dated API version requests resolve to without a Service-Version header.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

/**
 * The `organisation` beside a row's `organisationId`: batched (src/services/related.ts) and shown
 * under Organisation's rule, so a caller who may not read the organisation gets null with the
 * refusal at its path.
 */
export function organisationRelation(description = 'Its organisation (null, with an error, where you may not read the organisation).') {
  return {
    type: Organisation,
    nullable: true,
    description,
    resolve: (row: { organisationId: string | null }, _args: unknown, ctx: RequestContext) =>
      related(ctx, 'organisation', row.organisationId),
  } as const;
}

const UpdateOrganisationInput = inputFrom('UpdateOrganisationInput', updateOrganisationInput, {
  description: 'Changes to the organisation; omitted fields stay.',
  fields: {
    name: '1 to 255 characters.',
    primaryColor: '# followed by six hex digits; null clears it.',
    secondaryColor: '# followed by six hex digits; null clears it.',
    logoUrl: 'An http(s) URI; null clears it.',
    metadata: 'Free-form object; null clears it.',
    apiVersion: 'A known, non-sunset dated version (YYYY-MM-DD).',
  },
});

builder.queryFields((t) => ({
  organisation: t.field({
    type: Organisation,
    nullable: true,
    description: 'The organisation named by X-Service-Org (GET /v1/organisation).',
    authScopes: { $all: { organisation: true, permission: 'organisation.read' } },
    resolve: (_root, _args, ctx) => getOrganisation(ctx),
  }),
}));

builder.mutationFields((t) => ({
  updateOrganisation: t.field({
    ...payload('UpdateOrganisation', 'organisation', Organisation, 'The organisation as changed.'),
    description: 'Changes the organisation (PATCH /v1/organisation). An unknown or sunset apiVersion answers UNSUPPORTED_VERSION.',
    authScopes: { $all: { organisation: true, organisationPermission: 'organisation.write' } },
    args: { input: t.arg({ type: UpdateOrganisationInput, required: true, description: 'The changes.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => updateOrganisation(ctx, input)),
  }),
}));
