import { z } from 'zod';
import { assertMayGrant } from '../auth/granting.ts';
import { mintKey, sha256 } from '../auth/keys.ts';
import { hashPassword, verifyPassword } from '../auth/passwords.ts';
import { publicUrl } from '../config.ts';
import { organisationOf, type RequestContext } from '../context.ts';
import { isUniqueViolation, type Database } from '../db/client.ts';
import { tenantDatabase } from '../db/tenant.ts';
import { AppError, type ValidationIssue } from '../errors.ts';
import type { Invitation, Organisation } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { LIMITS, limitedArray } from '../limits/limits.ts';
import { clientBucket, type ThrottleSubject } from '../limits/rate-limiter.ts';
import { reference, validate, type Raw } from '../validation.ts';
import { issueSession, signInThrottle, type SignInResult } from './sessions.ts';
import { changedSince, paginate, type PolledListArgs } from '../pagination.ts';
import { batched } from '../db/batch.ts';
import { audited, changesBetween, lockForChange, recordAudit, type AuditEntryInput } from './audit.ts';
import { assignmentEntry, removeAssignments } from './assignment-audit.ts';

/** How long an invitation (and each resent code) can be redeemed. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const name = z.string().trim().min(1).max(255);

/**
 * docs/spec/service-spec.md §2 "User invitation" create request, plus `accountId` (our addition): the account
 * the roles are granted on, by default the organisation's oldest account that is not deleted.
 */
export const createInvitationInput = z.strictObject({
  organisationId: z.string().min(1),
  email: z
    .email()
    .max(320)
    .transform((email) => email.toLowerCase()),
  firstName: name.nullish(),
  lastName: name.nullish(),
  roleIds: limitedArray(reference, 'rolesPerUser', `at most ${LIMITS.rolesPerUser} roles per user`).nullish(),
  accountId: reference.nullish(),
});

export type CreateInvitationInput = z.input<typeof createInvitationInput>;

const redeemPassword = z.string().min(8, 'at least 8 characters').max(1024);

/** `password` may be left out by a person who accepts with their own session (Authorization: Bearer). */
export const redeemInvitationInput = z.object({ code: z.string().min(1).max(512), password: redeemPassword.nullish() });
const redeemWithPassword = redeemInvitationInput.extend({ password: redeemPassword });

/**
 * 32 random bytes, base64url: the single-use redemption code. It exists in the clear only in the
 * mail to the invited address (stored as its sha256, shown nowhere), so holding it proves that its
 * holder received that mail: the one proof of controlling the email this service accepts before it
 * creates a person's password.
 */
function newCode(): { code: string; codeHash: string; codeHint: string } {
  const { key: code, keyHash: codeHash } = mintKey('');
  return { code, codeHash, codeHint: `${code.slice(0, 4)}…` };
}

/** Failed redemptions (unknown code, wrong password) per client address before they must wait. */
const REDEMPTION_FAILURES_FREE = 10;

function newExpiry(now = Date.now()): Date {
  return new Date(now + INVITATION_TTL_MS);
}

/** The invitation unless it is redeemed (409) or expired (410). */
function assertRedeemable(invitation: Invitation, now = new Date()): void {
  if (invitation.redeemedAt) throw new AppError('CONFLICT', 'The invitation has already been redeemed.');
  if (invitation.expiresAt.getTime() <= now.getTime()) throw new AppError('GONE', 'The invitation has expired.');
}

async function sendInvitationMail(ctx: RequestContext, organisation: Organisation, invitation: Invitation, code: string): Promise<void> {
  const link = `${publicUrl(ctx.runtime.config)}/invite?code=${encodeURIComponent(code)}`;
  await ctx.runtime.mailer.send({
    to: invitation.email,
    subject: `You are invited to ${organisation.name}`,
    text: [
      `You have been invited to join ${organisation.name}.`,
      '',
      `Accept the invitation and choose your password here:`,
      link,
      '',
      `The link works once and expires on ${invitation.expiresAt.toISOString()}.`,
      'If you did not expect this invitation, ignore this message.',
    ].join('\n'),
    meta: { kind: 'invitation', invitationId: invitation.id, code },
  });
}

/** Where an invitation stands: redeemed; else pending until its code expires, then expired (a resend renews it). */
export const INVITATION_STATUSES = ['pending', 'expired', 'redeemed'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

export function invitationStatus(invitation: Pick<Invitation, 'redeemedAt' | 'expiresAt'>, now = Date.now()): InvitationStatus {
  if (invitation.redeemedAt) return 'redeemed';
  return invitation.expiresAt.getTime() <= now ? 'expired' : 'pending';
}

/** The same standing as a condition, so a list filters by it in its statement. */
function standing(status: InvitationStatus | null | undefined, now = new Date()): Record<string, unknown> {
  if (status === 'redeemed') return { redeemedAt: { not: null } };
  if (status === 'pending') return { redeemedAt: null, expiresAt: { gt: now } };
  if (status === 'expired') return { redeemedAt: null, expiresAt: { lte: now } };
  return {};
}

const invitationFilters = z.object({ status: z.enum(INVITATION_STATUSES).nullish() });

/** Invitations of the organisation, newest first, optionally only those that stand so now. */
export function listInvitations(ctx: RequestContext, args: PolledListArgs & Raw<z.input<typeof invitationFilters>>) {
  const { updatedSince, status, ...page } = args;
  const filters = [changedSince(updatedSince), standing(validate(invitationFilters, { status }).status)];
  return paginate(
    page,
    [
      ['createdAt', 'desc'],
      ['id', 'asc'],
    ],
    (keyset) => ctx.db.invitation.count({ where: { AND: [...filters, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.invitation.findMany({ where: { AND: [...filters, keyset] }, orderBy, skip, take }),
  );
}

/**
 * The open invitation of each pending user (the newest not redeemed), batched over a page of users;
 * an active or disabled user has none.
 */
export const openInvitationOf = batched(async (ctx: RequestContext, userIds: string[]) => {
  const rows = await ctx.db.invitation.findMany({ where: { userId: { in: userIds }, redeemedAt: null }, orderBy: { createdAt: 'asc' } });
  return new Map(rows.map((row) => [row.userId, row]));
});

export async function getInvitation(ctx: RequestContext, id: string): Promise<Invitation> {
  const invitation = await ctx.db.invitation.findFirst({ where: { id } });
  if (!invitation) throw AppError.notFound('Invitation not found.');
  return invitation;
}

/** The account roles are granted on: the named one, or the oldest account not deleted. */
async function grantAccount(ctx: RequestContext, accountId: string | null | undefined) {
  if (accountId) {
    const account = await ctx.db.account.findFirst({ where: { id: accountId, isDeleted: false }, select: { id: true } });
    if (!account) throw AppError.unknownReferences([{ path: 'accountId', message: 'No such account in this organisation.' }]);
    return account.id;
  }
  const oldest = await ctx.db.account.findFirst({
    where: { isDeleted: false },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { id: true },
  });
  return oldest?.id ?? null;
}

/**
 * Invites a person: a pending user with the roles on one account and the invitation, in one
 * transaction, then the mail with the code. The inviter must hold every permission the roles
 * grant on that account, so an invitation never hands out more than its author has.
 */
export async function createInvitation(ctx: RequestContext, raw: CreateInvitationInput): Promise<Invitation> {
  const organisation = organisationOf(ctx);
  const input = validate(createInvitationInput, raw);
  // Another organisation named in a body is answered as one named in a path (docs/spec/contract.md).
  if (input.organisationId !== organisation.id) {
    throw AppError.unknownReferences([{ path: 'organisationId', message: 'Not the organisation of this request.' }]);
  }

  const roleIds = input.roleIds ?? [];
  const roles = roleIds.length ? await ctx.db.role.findMany({ where: { id: { in: roleIds }, isDeleted: false } }) : [];
  const unknown: ValidationIssue[] = roleIds.flatMap((id, index) =>
    roles.some((role) => role.id === id)
      ? []
      : [{ path: `roleIds.${index}`, message: `No such role in this organisation: ${id.slice(0, 128)}` }],
  );
  if (unknown.length) throw AppError.unknownReferences(unknown);

  const accountId = await grantAccount(ctx, input.accountId);
  if (roles.length && !accountId) throw new AppError('CONFLICT', 'The organisation has no account to grant the roles on.');
  for (const role of roles) {
    assertMayGrant(ctx, role.permissions, accountId, `the role "${role.name}"`, `roleIds.${roleIds.indexOf(role.id)}`);
  }

  const now = Date.now();
  const invitedById = ctx.principal?.kind === 'staff' ? ctx.principal.userId : null;
  const { code, codeHash, codeHint } = newCode();
  let invitation: Invitation;
  try {
    invitation = await ctx.db.$transaction(async (tx) => {
      const existing = await tx.user.findFirst({
        where: { email: input.email },
        include: { invitations: { where: { redeemedAt: null, expiresAt: { gt: new Date(now) } }, select: { id: true } } },
      });
      if (existing) {
        if (existing.status !== 'pending') {
          throw new AppError('CONFLICT', `${input.email} is already a user of this organisation.`);
        }
        if (existing.invitations.length) {
          throw new AppError('CONFLICT', `${input.email} already has an open invitation; resend or delete it.`);
        }
        // Only expired invitations point at this pending user: the new invitation supersedes them,
        // and they go with the user and the user's roles, each audited. Conditional, so of two
        // concurrent re-invitations one finds nothing to replace and the other's insert of the
        // same email fails on users(organisationId, email).
        const superseded = await tx.invitation.findMany({ where: { userId: existing.id } });
        await removeAssignments(tx, ctx, { userId: existing.id });
        const replaced = await tx.user.deleteMany({ where: { id: existing.id, status: 'pending' } });
        if (replaced.count === 0) throw new AppError('CONFLICT', `${input.email} was invited concurrently.`);
        for (const expired of superseded) await recordAudit(tx, ctx, invitationDeleted(expired));
      }
      const user = await tx.user.create({
        data: {
          id: newId('user'),
          organisationId: organisation.id,
          email: input.email,
          firstName: input.firstName ?? null,
          lastName: input.lastName ?? null,
          status: 'pending',
        },
      });
      if (roles.length) {
        const assigned = await tx.roleAssignment.createManyAndReturn({
          data: [...new Set(roles.map((role) => role.id))].map((roleId) => ({
            id: newId('roleAssignment'),
            organisationId: organisation.id,
            userId: user.id,
            accountId: accountId!,
            roleId,
          })),
        });
        for (const assignment of assigned) await recordAudit(tx, ctx, assignmentEntry('role_assignment.created', assignment));
      }
      const created = await tx.invitation.create({
        data: {
          id: newId('invitation'),
          organisationId: organisation.id,
          userId: user.id,
          codeHash,
          codeHint,
          email: input.email,
          roleIds: [...new Set(roleIds)],
          accountId,
          invitedById,
          expiresAt: newExpiry(now),
        },
      });
      await recordAudit(tx, ctx, {
        action: 'invitation.created',
        targetId: created.id,
        accountId: created.accountId,
        changes: changesBetween(null, created),
      });
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('CONFLICT', `${input.email} is already a user or invited.`);
    throw error;
  }

  try {
    await sendInvitationMail(ctx, organisation, invitation, code);
  } catch (error) {
    // An invitation nobody was told about would block re-inviting the email: undo it.
    await removeInvitation(ctx, invitation.id).catch((undoError: unknown) =>
      ctx.logger.error({ err: undoError, invitationId: invitation.id }, 'could not undo an invitation whose mail failed'),
    );
    throw error;
  }
  return invitation;
}

/**
 * The entry of an invitation redeemed, by its code or by signing in through an identity provider:
 * the person accepting acts as the user the invitation made, whatever credential they sent.
 */
export function invitationRedeemed(invitation: Invitation, userId: string, now: Date): AuditEntryInput {
  return {
    action: 'invitation.redeemed',
    organisationId: invitation.organisationId,
    actor: { kind: 'user', id: userId },
    targetId: invitation.id,
    accountId: invitation.accountId,
    changes: { redeemedAt: { before: null, after: now.toISOString() }, userStatus: { before: 'pending', after: 'active' } },
  };
}

/** The entry of an invitation deleted, or superseded by a new one for its email. */
function invitationDeleted(invitation: Invitation): AuditEntryInput {
  return {
    action: 'invitation.deleted',
    targetId: invitation.id,
    accountId: invitation.accountId,
    changes: changesBetween(invitation, null, ['email', 'roleIds', 'accountId']),
  };
}

/** Deletes an invitation and, while nobody redeemed it, its pending user with the user's roles. */
async function removeInvitation(ctx: RequestContext, id: string): Promise<{ deletedUserId: string | null }> {
  return ctx.db.$transaction(async (tx) => {
    const invitation = await tx.invitation.findFirst({ where: { id } });
    if (!invitation) throw AppError.notFound('Invitation not found.');
    if (invitation.redeemedAt) throw new AppError('CONFLICT', 'A redeemed invitation cannot be deleted.');
    // Conditional: a redemption that claimed it meanwhile wins, and this answers CONFLICT.
    const deleted = await tx.invitation.deleteMany({ where: { id, redeemedAt: null } });
    if (deleted.count === 0) throw new AppError('CONFLICT', 'The invitation was redeemed meanwhile.');
    await recordAudit(tx, ctx, invitationDeleted(invitation));
    // The pending user goes too while nothing else holds them, and with them their roles: the user
    // row locked first, so what is judged an orphan stays one until the deletion.
    await tx.$queryRaw`SELECT 1 FROM "users" WHERE "organisationId" = ${invitation.organisationId} AND "id" = ${invitation.userId} FOR UPDATE`;
    const orphan = { id: invitation.userId, status: 'pending' as const, personId: null, invitations: { none: {} } };
    if (!(await tx.user.findFirst({ where: orphan, select: { id: true } }))) return { deletedUserId: null };
    await removeAssignments(tx, ctx, { userId: invitation.userId });
    const pending = await tx.user.deleteMany({ where: orphan });
    return { deletedUserId: pending.count > 0 ? invitation.userId : null };
  });
}

/** Deletes an open invitation, and the pending user it made when nothing else holds them. */
export async function deleteInvitation(
  ctx: RequestContext,
  id: string,
): Promise<{ success: true; id: string; deletedUserId: string | null }> {
  const { deletedUserId } = await removeInvitation(ctx, id);
  return { success: true, id, deletedUserId };
}

/** A new code and a new expiry (the old code stops working), and the mail again. */
export async function resendInvitation(ctx: RequestContext, id: string): Promise<Invitation> {
  const organisation = organisationOf(ctx);
  const { code, codeHash, codeHint } = newCode();
  const updated = await audited(
    ctx,
    async (tx) => {
      // Locked and read again: the entry's before is what this resend replaced.
      await lockForChange(tx, organisation.id, 'invitations', id);
      const before = await tx.invitation.findFirst({ where: { id, redeemedAt: null } });
      const { count } = await tx.invitation.updateMany({
        where: { id, redeemedAt: null },
        data: { codeHash, codeHint, expiresAt: newExpiry() },
      });
      return { count, before, after: count ? await tx.invitation.findFirst({ where: { id } }) : null };
    },
    ({ before, after }) =>
      before && after
        ? { action: 'invitation.resent', targetId: id, accountId: after.accountId, changes: changesBetween(before, after) }
        : null,
  );
  const invitation = await getInvitation(ctx, id);
  if (updated.count === 0) throw new AppError('CONFLICT', 'The invitation has already been redeemed.');
  await sendInvitationMail(ctx, organisation, invitation, code);
  return invitation;
}

/**
 * Redeems a code: the person (new, or existing and proving who they are), their user in the
 * invitation's organisation made active, the invitation marked redeemed, and a session for that
 * organisation, in one transaction. The invitation is claimed with a conditional update, so of
 * concurrent redemptions of one code exactly one succeeds.
 *
 * A person's password is created here only for an email nobody has yet: the mailed code proves its
 * holder controls the email. An email that already has a person joins that person only when they
 * sign in as themselves — their current password, or their own session in Authorization — so an
 * invitation can never take over, or join someone to, an account its author does not own.
 * Failures (unknown code, wrong password) are throttled per client address, and a wrong password
 * like a failed sign-in of that email.
 */
export async function redeemInvitation(ctx: RequestContext, raw: Raw<{ code: string; password: string }>): Promise<SignInResult> {
  const { runtime } = ctx;
  const signedInAs = ctx.principal?.kind === 'staff' ? ctx.principal.personId : null;
  const input = validate(signedInAs ? redeemInvitationInput : redeemWithPassword, raw);
  const address: ThrottleSubject = {
    limit: 'invitation-code:address',
    subject: clientBucket(ctx.clientIp),
    free: REDEMPTION_FAILURES_FREE,
  };
  await runtime.throttle.assertAllowed([address]);
  // The one lookup across organisations: the code is what names the organisation.
  const found = await runtime.db.invitation.findUnique({ where: { codeHash: sha256(input.code) } });
  if (!found) {
    await runtime.throttle.fail([address]);
    throw AppError.notFound('Unknown invitation code.');
  }
  assertRedeemable(found);

  const db = tenantDatabase(runtime.db, found.organisationId);
  const existing = await runtime.db.person.findUnique({
    where: { realm_email: { realm: 'global', email: found.email } },
    include: { credential: true },
  });
  if (existing && signedInAs !== existing.id) {
    if (!existing.credential || !input.password) {
      throw new AppError(
        'UNAUTHENTICATED',
        'This email already has an account: accept the invitation signed in as yourself (its password, or your session as Authorization: Bearer).',
      );
    }
    const person = signInThrottle(existing.email, ctx.clientIp);
    await runtime.throttle.assertAllowed(person);
    if (!(await verifyPassword(existing.credential.passwordHash, input.password))) {
      await runtime.throttle.fail([...person, address]);
      throw new AppError('UNAUTHENTICATED', 'This email already has an account: enter its current password to accept.');
    }
  }
  if (!existing && !input.password)
    throw AppError.validation([{ path: 'password', message: 'Required: the password of the new account (at least 8 characters).' }]);
  const passwordHash = existing ? null : await hashPassword(input.password!);

  try {
    return await db.$transaction(async (tx) => {
      const now = new Date();
      const claimed = await tx.invitation.updateMany({
        where: { id: found.id, redeemedAt: null, expiresAt: { gt: now } },
        data: { redeemedAt: now },
      });
      if (claimed.count === 0) {
        const current = await tx.invitation.findFirst({ where: { id: found.id } });
        if (!current) throw AppError.notFound('Unknown invitation code.');
        assertRedeemable(current, now);
        throw new AppError('CONFLICT', 'The invitation has already been redeemed.');
      }

      const user = await tx.user.findFirst({ where: { id: found.userId } });
      if (!user || user.status !== 'pending') throw new AppError('CONFLICT', 'The invited user is no longer pending.');
      const person =
        existing ??
        (await tx.person.create({
          data: {
            id: newId('person'),
            email: found.email,
            firstName: user.firstName,
            lastName: user.lastName,
            credential: { create: { passwordHash: passwordHash! } },
          },
        }));
      const activated = await tx.user.updateMany({
        where: { id: user.id, status: 'pending' },
        data: { personId: person.id, status: 'active' },
      });
      if (activated.count === 0) throw new AppError('CONFLICT', 'The invited user is no longer pending.');
      // The person accepting acts as the user the invitation made, whatever credential they sent.
      await recordAudit(tx, ctx, invitationRedeemed(found, user.id, now));

      const tokens = await issueSession(runtime, tx as unknown as Database, person.id, found.organisationId);
      return {
        ...tokens,
        user: { id: person.id, email: person.email, firstName: person.firstName, lastName: person.lastName },
      };
    });
  } catch (error) {
    // Another sign-up took the email meanwhile, or the person is already a user of this organisation.
    if (isUniqueViolation(error)) throw new AppError('CONFLICT', 'The invitation cannot be redeemed for this person any more.');
    throw error;
  }
}
