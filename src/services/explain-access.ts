import { z } from 'zod';
import { apiKeyRights, embedSessionRights, personRights, type CredentialRights } from '../auth/authenticate.ts';
import { isValidPermission, parsePermission, PEOPLE_ONLY_RESOURCES, type Explanation, type Grant } from '../auth/permissions.ts';
import { missingRight } from '../auth/refusal.ts';
import { organisationOf, type RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { reference, validate, type Raw } from '../validation.ts';
import { mayReadUser } from './users.ts';

/**
 * "Why may I?": whether a person, an API key or an embed session may do `permission` on an account,
 * and the grants that decide it. The answer is `Access.explain` on the Access authentication builds
 * for that credential (src/auth/authenticate.ts, the same loading), so it cannot differ from what a
 * request with that credential meets; test/platform/explain-access.test.ts compares the two for
 * every route.
 */

/** The kinds of principal the contract's `principalType` names, and the prefix of each one's id. */
export const PRINCIPAL_TYPES = { user: 'usr', api_key: 'oak', embed_session: 'ems' } as const;
type PrincipalType = keyof typeof PRINCIPAL_TYPES;

export const explainAccessInput = z
  .strictObject({
    principalType: z.enum(Object.keys(PRINCIPAL_TYPES) as [PrincipalType, ...PrincipalType[]]).nullish(),
    principalId: reference.nullish(),
    personId: reference.nullish(),
    apiKeyId: reference.nullish(),
    embedSessionId: reference.nullish(),
    permission: z.string().refine(isValidPermission, 'a permission string: resource.action[:all|:acc_…], each a word or *'),
    accountId: reference.nullish(),
  })
  .superRefine((input, issues) => {
    if (input.principalType && !input.principalId)
      issues.addIssue({ code: 'custom', path: ['principalId'], message: 'required with principalType' });
    if (input.principalId && !input.principalType)
      issues.addIssue({ code: 'custom', path: ['principalType'], message: 'required with principalId' });
    const named = (['principalType', 'personId', 'apiKeyId', 'embedSessionId'] as const).filter((key) => input[key]);
    for (const key of named.slice(1)) {
      issues.addIssue({ code: 'custom', path: [key], message: 'name at most one of principalType, personId, apiKeyId and embedSessionId' });
    }
    if (input.accountId && /:/.test(input.permission)) {
      issues.addIssue({
        code: 'custom',
        path: ['accountId'],
        message: 'omit accountId when the permission names its scope (:all or :acc_…)',
      });
    }
  });

export type SubjectKind = 'person' | 'apiKey' | 'embedSession';

export interface GrantView {
  source: 'role_assignment' | 'api_key_scope' | 'embed_session_scope';
  /** The permission string as the role states it, or the scope. */
  permission: string;
  /** The `resource.action` granted, wildcards as written. */
  granted: string;
  wildcard: boolean;
  scope: 'all' | 'account' | 'dynamic';
  /** Where it applies: account ids, or null for every account. */
  accountIds: string[] | null;
  roleAssignmentId: string | null;
  roleId: string | null;
  roleName: string | null;
  /** The account the role is assigned on (role grants), or the key's or session's account. */
  assignedOn: string | null;
}

export interface AccessExplanation {
  allowed: boolean;
  permission: string;
  /** The account decided on; null: the organisation as a whole (every account). */
  accountId: string | null;
  subject: {
    kind: 'person' | 'api_key' | 'embed_session';
    /** The credential's own id: the one of its kind is set. */
    personId: string | null;
    apiKeyId: string | null;
    embedSessionId: string | null;
    userId: string | null;
    accountId: string | null;
    scopes: string[] | null;
  };
  /** Why the credential itself is refused whatever it asks (a revoked key, an ended session), or null. */
  credentialRefusal: { code: string; message: string } | null;
  grants: GrantView[];
  nearby: GrantView[];
  reason: string;
}

export async function explainAccess(ctx: RequestContext, raw: Raw<z.input<typeof explainAccessInput>>): Promise<AccessExplanation> {
  const input = validate(explainAccessInput, raw);
  const organisation = organisationOf(ctx);
  const subject = await subjectOf(ctx, input);
  const self = isCaller(ctx, subject);
  // Asking about someone else shows their roles and assignments: those who may read roles do.
  if (!self && !ctx.access.allows('roles', 'read')) {
    throw missingRight(ctx, 'Explaining the access of another person or key needs roles.read on every account.');
  }
  // Said only to whoever may read that user (user(id:)'s rule); to others it is any other unknown id.
  if (subject.invited) {
    if (!(await userReadable(ctx, subject.id))) throw unknownSubject(subject);
    throw AppError.notFound(`User ${subject.id} has not accepted their invitation: they hold no rights yet.`);
  }
  // The account asked about, by accountId or in the permission's scope, is one of the organisation's.
  const scope = parsePermission(input.permission)!.scope;
  const named = input.accountId
    ? { path: 'accountId', id: input.accountId }
    : scope.startsWith('acc_')
      ? { path: 'permission', id: scope }
      : null;
  if (named) {
    const account = await ctx.db.account.findFirst({ where: { id: named.id, isDeleted: false }, select: { id: true } });
    if (!account) throw AppError.unknownReferences([{ path: named.path, message: 'No such account in this organisation.' }]);
  }
  const { db, authCache } = ctx.runtime;
  const rights =
    subject.kind === 'person'
      ? await personRights(db, authCache, organisation, subject.id)
      : subject.kind === 'apiKey'
        ? await apiKeyRights(db, organisation.id, subject.id)
        : await embedSessionRights(db, authCache, organisation.id, subject.id);
  if (!rights) throw unknownSubject(subject);
  const decided = rights.access.explain(input.permission, input.accountId ?? null)!;
  if (!self && !(await mayReadSubject(ctx, rights, decided.accountId))) {
    throw unknownSubject(subject);
  }
  // A key or session holding a right only people may use is refused it all the same, and so is one
  // asked about every resource (`*`), which covers those: what it holds is nearby, not a grant.
  const peopleOnly =
    subject.kind !== 'person' && (decided.resource === '*' || PEOPLE_ONLY_RESOURCES.has(decided.resource)) ? decided.resource : null;
  const explanation =
    peopleOnly !== null ? { ...decided, allowed: false, grants: [], nearby: [...decided.grants, ...decided.nearby] } : decided;
  // Of a person's assignments, those on accounts where the caller may read assignments: an
  // assignment it cannot list is not shown here either.
  const shown = (grant: Grant) =>
    self || grant.source.kind !== 'role' || ctx.access.allows('role_assignments', 'read', grant.source.assignedOn);
  const grants = explanation.grants.filter(shown);
  const nearby = explanation.nearby.filter(shown);
  const refusal = rights.refusal ? { code: rights.refusal.code, message: rights.refusal.message } : null;
  return {
    allowed: explanation.allowed && refusal === null,
    permission: input.permission,
    accountId: explanation.accountId,
    subject: subjectView(rights),
    credentialRefusal: refusal,
    grants: grants.map(grantView),
    nearby: nearby.map(grantView),
    reason: reason(subject.kind, { ...explanation, grants, nearby }, refusal, {
      peopleOnly,
      hidden: grants.length < explanation.grants.length,
    }),
  };
}

const SUBJECT_WORDS: Record<SubjectKind, string> = { person: 'person', apiKey: 'API key', embedSession: 'embed session' };

interface Subject {
  kind: SubjectKind;
  id: string;
  /** The id as the request named it (a user's, where `id` is their person's), for refusals. */
  asked?: string;
  /** A user who has not accepted their invitation: no person, no rights yet. */
  invited?: true;
}

/** Not found, in the words of the id asked: a refusal never shows the person behind a user. */
function unknownSubject(subject: Subject): AppError {
  return AppError.notFound(`No ${SUBJECT_WORDS[subject.kind]} ${(subject.asked ?? subject.id).slice(0, 100)} in this organisation.`);
}

/** The credential asked about: the one named, or the caller's own. */
async function subjectOf(ctx: RequestContext, input: z.output<typeof explainAccessInput>): Promise<Subject> {
  if (input.principalType && input.principalId) return named(ctx, input.principalType, input.principalId);
  if (input.personId) return { kind: 'person', id: input.personId };
  if (input.apiKeyId) return { kind: 'apiKey', id: input.apiKeyId };
  if (input.embedSessionId) return { kind: 'embedSession', id: input.embedSessionId };
  const principal = ctx.principal;
  if (principal?.kind === 'staff') return { kind: 'person', id: principal.personId };
  if (principal?.kind === 'apiKey') return { kind: 'apiKey', id: principal.apiKeyId };
  if (principal?.kind === 'embed') return { kind: 'embedSession', id: principal.sessionId };
  throw new AppError('UNAUTHENTICATED');
}

/**
 * The contract's `principalType` and `principalId`. A user is named by the id the users list
 * answers (a person who has joined the organisation is found by their person id too, which shares
 * its prefix); one who has not yet accepted their invitation holds no rights to explain.
 */
async function named(ctx: RequestContext, type: PrincipalType, id: string): Promise<Subject> {
  const unknown = () => AppError.notFound(`No ${type.replace('_', ' ')} ${id.slice(0, 100)} in this organisation.`);
  if (!id.startsWith(`${PRINCIPAL_TYPES[type]}_`)) throw unknown();
  if (type === 'api_key') return { kind: 'apiKey', id };
  if (type === 'embed_session') return { kind: 'embedSession', id };
  const user = await ctx.db.user.findFirst({ where: { id }, select: { personId: true } });
  if (!user) return { kind: 'person', id };
  return user.personId ? { kind: 'person', id: user.personId, asked: id } : { kind: 'person', id, invited: true };
}

function isCaller(ctx: RequestContext, subject: { kind: SubjectKind; id: string }): boolean {
  const principal = ctx.principal;
  if (subject.kind === 'person') return principal?.kind === 'staff' && principal.personId === subject.id;
  if (subject.kind === 'apiKey') return principal?.kind === 'apiKey' && principal.apiKeyId === subject.id;
  return principal?.kind === 'embed' && principal.sessionId === subject.id;
}

/**
 * Beyond roles.read, what reading that subject takes, as its own reads are scoped: for a person,
 * reading the user (user(id:)'s rule) and the assignments on the account asked about
 * (role_assignments.read, schema/types/role-assignment.ts); for a key or session, its scopes where
 * it lives (api_keys.read, a signed-in person's right); else it is not found.
 */
async function mayReadSubject(ctx: RequestContext, rights: CredentialRights, accountId: string | null): Promise<boolean> {
  const principal = rights.principal!;
  if (principal.kind === 'staff') {
    // A person who is no user of the organisation is any unknown id to others.
    if (principal.userId === null) return false;
    return ctx.access.allows('role_assignments', 'read', accountId) && (await userReadable(ctx, principal.userId));
  }
  // Keys are read by signed-in people only (PEOPLE_ONLY_RESOURCES): a key asking about another
  // key or session is refused as a key listing keys would be.
  if (ctx.principal?.kind !== 'staff') return false;
  const home = principal.kind === 'apiKey' || principal.kind === 'embed' ? principal.accountId : null;
  return ctx.access.allows('api_keys', 'read', home);
}

/** Whether the caller may read this user of the organisation (user(id:), src/services/users.ts). */
async function userReadable(ctx: RequestContext, userId: string): Promise<boolean> {
  const roleAssignments = await ctx.db.roleAssignment.findMany({ where: { userId }, select: { accountId: true } });
  return mayReadUser(ctx, { id: userId, roleAssignments });
}

function subjectView(rights: CredentialRights): AccessExplanation['subject'] {
  const principal = rights.principal!;
  const none = { personId: null, apiKeyId: null, embedSessionId: null, userId: null, accountId: null, scopes: null };
  if (principal.kind === 'staff') return { ...none, kind: 'person', personId: principal.personId, userId: principal.userId };
  if (principal.kind === 'apiKey') {
    return { ...none, kind: 'api_key', apiKeyId: principal.apiKeyId, accountId: principal.accountId, scopes: principal.scopes };
  }
  if (principal.kind === 'embed') {
    return {
      ...none,
      kind: 'embed_session',
      embedSessionId: principal.sessionId,
      accountId: principal.accountId,
      scopes: principal.scopes,
    };
  }
  throw new AppError('INTERNAL', 'explained a credential that is neither a person, an API key nor an embed session');
}

function grantView(grant: Grant): GrantView {
  const source = grant.source;
  const granted = `${grant.resource}.${grant.action}`;
  const common = {
    granted,
    wildcard: grant.resource === '*' || grant.action === '*',
    accountIds: grant.accounts === 'all' ? null : [...grant.accounts].sort(),
  };
  if (source.kind === 'role') {
    return {
      ...common,
      source: 'role_assignment',
      permission: source.permission,
      scope: source.scope,
      roleAssignmentId: source.assignmentId,
      roleId: source.roleId,
      roleName: source.roleName,
      assignedOn: source.assignedOn,
    };
  }
  return {
    ...common,
    source: source.holder === 'apiKey' ? 'api_key_scope' : 'embed_session_scope',
    permission: source.scope,
    scope: source.accountId === null ? 'all' : 'account',
    roleAssignmentId: null,
    roleId: null,
    roleName: null,
    assignedOn: source.accountId,
  };
}

/**
 * One sentence: the decision and what it rests on, or for a denial what is missing and what is
 * held nearby. `hidden`: some grants that decide it are on accounts whose assignments the caller
 * may not read (left out of `explanation`).
 */
function reason(
  kind: SubjectKind,
  explanation: Explanation,
  refusal: AccessExplanation['credentialRefusal'],
  { peopleOnly, hidden }: { peopleOnly: string | null; hidden: boolean },
): string {
  const right = `${explanation.resource}.${explanation.action}`;
  const where = explanation.accountId ? `on ${explanation.accountId}` : 'on every account';
  const asked = `${right} ${where}`;
  const holder = kind === 'person' ? 'the person' : `the ${SUBJECT_WORDS[kind]}`;
  if (refusal) return `${asked}: ${holder} is refused whatever it asks: ${refusal.message}`;
  if (explanation.allowed) {
    const shown = explanation.grants.map(describe);
    if (hidden) shown.push('a role assigned on an account whose assignments you may not read');
    return `${asked}: allowed by ${shown.join('; ')}`;
  }
  const peopleOnlyResources = peopleOnly === '*' ? [...PEOPLE_ONLY_RESOURCES].join(', ') : peopleOnly;
  const missing = peopleOnly
    ? `only a signed-in person may use ${peopleOnlyResources} (SIGNED_IN_USER_REQUIRED)${peopleOnly === '*' ? ', which * covers' : ''}, whatever ${holder} holds`
    : kind === 'person'
      ? 'no role assignment grants it'
      : `no scope of ${holder} grants it${explanation.accountId === null ? ' on every account' : ''}`;
  const near = explanation.nearby.map(describe);
  return `${asked}: ${missing}${near.length > 0 ? `; ${holder} holds ${near.join('; ')}` : ''}`;
}

function describe(grant: Grant): string {
  const granted = `${grant.resource}.${grant.action}`;
  const on = grant.accounts === 'all' ? 'on every account' : `on ${[...grant.accounts].join(', ')}`;
  const source = grant.source;
  if (source.kind === 'role') {
    const written = source.permission === granted ? '' : ` (as ${source.permission})`;
    return `${granted} ${on} via role ${source.roleName ?? source.roleId} assigned on ${source.assignedOn}${written}`;
  }
  return `${granted} ${on} by its scope ${source.scope}`;
}
