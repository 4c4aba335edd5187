import { explainAccess, PRINCIPAL_TYPES, type AccessExplanation, type GrantView } from '../../src/services/explain-access.ts';
import { builder } from '../builder.ts';
import { related, relatedUser } from '../../src/services/related.ts';
import { Account, accountRelation } from './account.ts';
import { Role } from './role.ts';
import { User } from './user.ts';
import { valuesEnum } from './common.ts';

const AccessSubjectKind = valuesEnum('AccessSubjectKind', 'The kind of credential an explanation is about.', {
  person: 'A person, through their role assignments in the organisation.',
  api_key: 'An organisation API key, through its scopes on its account (or every account).',
  embed_session: 'An embed session, through its scopes on its account.',
});

const AccessPrincipalType = valuesEnum('AccessPrincipalType', 'The kind of credential `principalId` names.', {
  user: 'A user of the organisation (usr_, as `users` lists them), through their role assignments.',
  api_key: 'An organisation API key (oak_).',
  embed_session: 'An embed session (ems_).',
} satisfies Record<keyof typeof PRINCIPAL_TYPES, string>);

const AccessGrantSource = valuesEnum('AccessGrantSource', 'Where a grant comes from.', {
  role_assignment: 'A permission of a role assigned to the user on an account.',
  api_key_scope: 'A scope of an API key.',
  embed_session_scope: 'A scope of an embed session.',
});

const AccessGrantScope = valuesEnum('AccessGrantScope', 'Which accounts a grant reaches, as its permission or credential states it.', {
  all: 'Every account of the organisation (`:all`, or an organisation-wide key).',
  account: 'One named account (`:acc_…`, or the account a key or session is pinned to).',
  dynamic: 'No scope: the account the role is assigned on.',
});

const AccessSubjectInfo = builder.objectRef<AccessExplanation['subject']>('AccessSubjectInfo').implement({
  description: 'The credential an explanation is about.',
  fields: (t) => ({
    kind: t.field({ type: AccessSubjectKind, description: 'Person, API key or embed session.', resolve: (s) => s.kind }),
    personId: t.exposeID('personId', { nullable: true, description: 'The person (usr_), when it is one.' }),
    apiKeyId: t.exposeID('apiKeyId', { nullable: true, description: 'The API key (oak_), when it is one.' }),
    embedSessionId: t.exposeID('embedSessionId', { nullable: true, description: 'The embed session (ems_), when it is one.' }),
    userId: t.exposeID('userId', { nullable: true, description: "A person's user id inside the organisation; null otherwise." }),
    accountId: t.exposeID('accountId', {
      nullable: true,
      description: 'The account a key or session acts for; null for a person or an organisation-wide key.',
    }),
    scopes: t.exposeStringList('scopes', { nullable: true, description: 'The scopes of a key or session; null for a person.' }),
    user: t.field({
      type: User,
      nullable: true,
      description:
        "A person's user in the organisation, as user(id:) shows it; null otherwise (or, with an error, where you may not read it).",
      resolve: async (subject, _args, ctx) => await relatedUser(ctx, subject.userId),
    }),
    account: t.field(accountRelation('The account a key or session acts for; null for a person or an organisation-wide key.')),
  }),
});

const AccessGrantEntry = builder.objectRef<GrantView>('AccessGrantEntry').implement({
  description: 'One grant the subject holds: a permission of an assigned role, or a scope of a key or session.',
  fields: (t) => ({
    source: t.field({ type: AccessGrantSource, description: 'Role assignment or scope.', resolve: (g) => g.source }),
    permission: t.exposeString('permission', { description: 'The permission string as the role states it, or the scope.' }),
    granted: t.exposeString('granted', { description: 'The resource.action granted, wildcards (*) as written.' }),
    wildcard: t.exposeBoolean('wildcard', { description: 'Whether the resource or the action is the wildcard *.' }),
    scope: t.field({ type: AccessGrantScope, description: 'Which accounts it reaches, as stated.', resolve: (g) => g.scope }),
    accountIds: t.exposeIDList('accountIds', { nullable: true, description: 'The accounts it applies to; null: every account.' }),
    roleAssignmentId: t.exposeID('roleAssignmentId', { nullable: true, description: 'The role assignment (uar_); null for a scope.' }),
    roleId: t.exposeID('roleId', { nullable: true, description: 'The role (rol_); null for a scope.' }),
    roleName: t.exposeString('roleName', { nullable: true, description: "The role's name; null for a scope." }),
    assignedOn: t.exposeID('assignedOn', {
      nullable: true,
      description: "The account the role is assigned on, or the key's or session's account; null for an organisation-wide key.",
    }),
    role: t.field({
      type: Role,
      nullable: true,
      description: 'The role (role grants), to link to it; null for a scope, or one deleted since.',
      resolve: (grant, _args, ctx) => related(ctx, 'role', grant.roleId),
    }),
    accounts: t.field({
      type: [Account],
      nullable: { list: true, items: true },
      description: 'The accounts it applies to, as Account; null: every account.',
      resolve: (grant, _args, ctx) => grant.accountIds && Promise.all(grant.accountIds.map((id) => related(ctx, 'account', id))),
    }),
  }),
});

const CredentialRefusalInfo = builder.objectRef<NonNullable<AccessExplanation['credentialRefusal']>>('CredentialRefusalInfo').implement({
  description: 'Why a credential is refused whatever it asks for (a revoked or expired key, an ended session).',
  fields: (t) => ({
    code: t.exposeString('code', { description: 'The code a request with it is answered with.' }),
    message: t.exposeString('message', { description: 'The message a request with it is answered with.' }),
  }),
});

const ExplainAccessResult = builder.objectRef<AccessExplanation>('ExplainAccessResult').implement({
  description: 'Whether a credential may do something, and the grants that decide it (the evaluator requests are checked with).',
  fields: (t) => ({
    allowed: t.exposeBoolean('allowed', { description: 'Whether a request with this credential would be allowed it.' }),
    permission: t.exposeString('permission', { description: 'The permission asked about, as given.' }),
    accountId: t.exposeID('accountId', {
      nullable: true,
      description: 'The account decided on; null: every account (the organisation as a whole).',
    }),
    subject: t.field({ type: AccessSubjectInfo, description: 'The credential asked about.', resolve: (e) => e.subject }),
    credentialRefusal: t.field({
      type: CredentialRefusalInfo,
      nullable: true,
      description: 'Why the credential itself is refused whatever it asks; null while it is usable.',
      resolve: (e) => e.credentialRefusal,
    }),
    grants: t.field({
      type: [AccessGrantEntry],
      description:
        "The grants that cover the permission there (exact or by wildcard); empty when nothing does. Of a person's role assignments, those on accounts where you may read assignments.",
      resolve: (e) => e.grants,
    }),
    nearby: t.field({
      type: [AccessGrantEntry],
      description: 'For a denial: what the subject holds near it (the resource there with another action, or the right elsewhere).',
      resolve: (e) => e.nearby,
    }),
    reason: t.exposeString('reason', { description: 'The decision in one sentence: what allows it, or what is missing.' }),
  }),
});

builder.queryFields((t) => ({
  explainAccess: t.field({
    type: ExplainAccessResult,
    nullable: true,
    description:
      'Why a person, API key or embed session may or may not do a permission on an account (GET /v1/access/explain). ' +
      'Name the credential by principalType and principalId, or by personId, apiKeyId or embedSessionId. ' +
      'Anyone may ask about themselves (name no one); asking about others needs roles.read on every account, and reading them: a person as user(id:) reads them, with role_assignments.read on the account (only the assignments you may read are shown); a key or session, as a signed-in person with api_keys.read.',
    authScopes: { organisation: true },
    args: {
      principalType: t.arg({ type: AccessPrincipalType, description: 'The kind of credential asked about, with principalId.' }),
      principalId: t.arg.id({ description: 'The user (usr_), API key (oak_) or embed session (ems_) asked about, with principalType.' }),
      personId: t.arg.id({ description: 'The person (usr_) asked about.' }),
      apiKeyId: t.arg.id({ description: 'The API key (oak_) asked about.' }),
      embedSessionId: t.arg.id({ description: 'The embed session (ems_) asked about.' }),
      permission: t.arg.string({ required: true, description: 'resource.action, optionally :all or :acc_… (as in roles).' }),
      accountId: t.arg.id({ description: 'The account a permission without scope is asked about on; omitted: every account.' }),
    },
    resolve: (_root, args, ctx) => explainAccess(ctx, args),
  }),
}));
