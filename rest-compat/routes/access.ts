import { z } from 'zod';
import { explainAccessInput } from '../../src/services/explain-access.ts';
import type { RestRoute } from '../route.ts';

const GRANT_FIELDS = 'source permission granted wildcard scope accountIds roleAssignmentId roleId roleName assignedOn';

const grant = z.object({
  source: z.enum(['role_assignment', 'api_key_scope', 'embed_session_scope']),
  permission: z.string(),
  granted: z.string(),
  wildcard: z.boolean(),
  scope: z.enum(['all', 'account', 'dynamic']),
  accountIds: z.array(z.string()).nullable(),
  roleAssignmentId: z.string().nullable(),
  roleId: z.string().nullable(),
  roleName: z.string().nullable(),
  assignedOn: z.string().nullable(),
});

const explanation = z.object({
  allowed: z.boolean(),
  permission: z.string(),
  accountId: z.string().nullable(),
  subject: z.object({
    kind: z.enum(['person', 'api_key', 'embed_session']),
    personId: z.string().nullable(),
    apiKeyId: z.string().nullable(),
    embedSessionId: z.string().nullable(),
    userId: z.string().nullable(),
    accountId: z.string().nullable(),
    scopes: z.array(z.string()).nullable(),
  }),
  credentialRefusal: z.object({ code: z.string(), message: z.string() }).nullable(),
  grants: z.array(grant),
  nearby: z.array(grant),
  reason: z.string(),
});

export const accessRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/access/explain',
    summary:
      'Why a person (personId), API key (apiKeyId) or embed session (embedSessionId) may or may not do a permission on an account; ' +
      'name none to ask about yourself. Asking about others needs roles.read on every account.',
    tag: 'Access',
    organisation: true,
    operation: `query ExplainAccess($personId: ID, $apiKeyId: ID, $embedSessionId: ID, $permission: String!, $accountId: ID) {
      explainAccess(personId: $personId, apiKeyId: $apiKeyId, embedSessionId: $embedSessionId, permission: $permission, accountId: $accountId) {
        allowed permission accountId
        subject { kind personId apiKeyId embedSessionId userId accountId scopes }
        credentialRefusal { code message }
        grants { ${GRANT_FIELDS} }
        nearby { ${GRANT_FIELDS} }
        reason
      }
    }`,
    query: explainAccessInput,
    bind: { '...': 'query' },
    result: (data) => ({ explanation: data.explainAccess }),
    response: z.object({ explanation }),
  },
];
