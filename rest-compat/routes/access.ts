import { z } from 'zod';
import { ADMINISTRATOR_PERMISSION } from '../../src/services/administrators.ts';
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

/** One grant that decided an allowed answer, as the contract names it. */
const decision = z.object({
  kind: z.enum(['role_assignment', 'org_admin', 'api_key_scope', 'embed_session_scope']),
  id: z.string().nullable(),
  roleId: z.string().optional(),
  matched: z.string(),
});

type Explanation = z.infer<typeof explanation>;

/**
 * The contract's answer (`allowed`, `permission`, `accountId`, `decidedBy`, `missing`) beside the
 * whole `explanation`. A role grant of the organisation administrator's permission is `org_admin`;
 * a scope is decided by its key or session, named by `id`.
 */
function contractAnswer(found: Explanation) {
  const decidedBy = found.allowed
    ? found.grants.map((grant) => {
        if (grant.source === 'role_assignment') {
          const kind = grant.permission === ADMINISTRATOR_PERMISSION ? 'org_admin' : 'role_assignment';
          return { kind, id: grant.roleAssignmentId, roleId: grant.roleId ?? undefined, matched: grant.permission };
        }
        const id = grant.source === 'api_key_scope' ? found.subject.apiKeyId : found.subject.embedSessionId;
        return { kind: grant.source, id, matched: grant.permission };
      })
    : [];
  const where = found.accountId ? ` on ${found.accountId}` : found.permission.includes(':') ? '' : ' on every account';
  const missing = found.allowed ? null : (found.credentialRefusal?.message ?? `${found.permission}${where}`);
  return { allowed: found.allowed, permission: found.permission, accountId: found.accountId, decidedBy, missing, explanation: found };
}

export const accessRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/access/explain',
    summary:
      'Why a user, API key or embed session (principalType user, api_key or embed_session, and principalId; or personId, apiKeyId ' +
      'or embedSessionId) may or may not do a permission on an account; name none to ask about yourself. Asking about others ' +
      'needs roles.read on every account, and reading them (a person: role_assignments.read on the account asked about and on ' +
      'one where they hold a role, only those assignments shown; a key or session: a signed-in person with api_keys.read). ' +
      'Answers allowed, permission, accountId, decidedBy (the grants that allowed it) and ' +
      'missing (what a denial lacks), and the whole explanation.',
    tag: 'Access',
    organisation: true,
    operation: `query ExplainAccess($principalType: AccessPrincipalType, $principalId: ID, $personId: ID, $apiKeyId: ID, $embedSessionId: ID,
      $permission: String!, $accountId: ID) {
      explainAccess(principalType: $principalType, principalId: $principalId, personId: $personId, apiKeyId: $apiKeyId,
        embedSessionId: $embedSessionId, permission: $permission, accountId: $accountId) {
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
    result: (data) => contractAnswer(data.explainAccess),
    response: z.object({
      allowed: z.boolean(),
      permission: z.string(),
      accountId: z.string().nullable(),
      decidedBy: z.array(decision),
      missing: z.string().nullable(),
      explanation,
    }),
  },
];
