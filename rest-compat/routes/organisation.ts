import { z } from 'zod';
import { updateOrganisationInput } from '../../src/services/organisation.ts';
import type { RestRoute } from '../route.ts';

export const ORGANISATION_FIELDS = 'id name primaryColor secondaryColor logoUrl metadata apiVersion createdAt updatedAt';

export const organisation = z.object({
  id: z.string(),
  name: z.string(),
  primaryColor: z.string().nullable(),
  secondaryColor: z.string().nullable(),
  logoUrl: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  apiVersion: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const organisationRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/organisation',
    summary: 'The organisation named by X-Service-Org.',
    tag: 'Organisation',
    organisation: true,
    operation: `query Organisation { organisation { ${ORGANISATION_FIELDS} } }`,
    result: (data) => ({ organisation: data.organisation }),
    response: z.object({ organisation }),
  },
  {
    method: 'PATCH',
    path: '/organisation',
    summary: 'Change the organisation: name, colours, logo, metadata, pinned API version.',
    tag: 'Organisation',
    organisation: true,
    operation: `mutation UpdateOrganisation($input: UpdateOrganisationInput!) { updateOrganisation(input: $input) { organisation { ${ORGANISATION_FIELDS} } } }`,
    body: updateOrganisationInput,
    bind: { input: 'body' },
    result: (data) => ({ organisation: data.updateOrganisation.organisation }),
    response: z.object({ organisation }),
  },
];
