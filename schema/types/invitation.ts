import {
  createInvitation,
  createInvitationInput,
  deleteInvitation,
  getInvitation,
  invitationStatus,
  listInvitations,
  openInvitationOf,
  redeemInvitation,
  redeemInvitationInput,
  resendInvitation,
  type InvitationStatus as InvitationStatusValue,
} from '../../src/services/invitations.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { accountRelation } from './account.ts';
import { User } from './user.ts';
import { related, relatedUser } from '../../src/services/related.ts';
import { Role } from './role.ts';
import { inputFrom } from '../input.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { SignInResultRef } from './auth.ts';
import { valuesEnum } from './common.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';

const READ = { $all: { organisation: true, organisationPermission: 'invitations.read' } } as const;
const WRITE = { $all: { organisation: true, organisationPermission: 'invitations.write' } } as const;

const InvitationStatus = valuesEnum('InvitationStatus', 'Where an invitation stands.', {
  pending: 'Sent; its code can be redeemed until expiresAt.',
  redeemed: 'The person accepted it and is a user of the organisation.',
  expired: 'Its code expired before it was redeemed; resending it sends a new code.',
} satisfies Record<InvitationStatusValue, string>);

export const Invitation = builder.prismaObject('Invitation', {
  interfaces: [Node],
  description: 'An invitation of a person to become a user of the organisation, with the roles they will hold on one account.',
  // The code is a credential: an invitation is visible only to those who may read or write invitations.
  authScopes: (_invitation, ctx) => ctx.access.allows('invitations', 'read') || ctx.access.allows('invitations', 'write'),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'The organisation the person is invited to.' }),
    organisation: t.field(organisationRelation()),
    userId: t.exposeID('userId', { description: 'The pending user the invitation created (usr_).' }),
    user: t.field({
      type: User,
      nullable: true,
      description: "The user it created (null, with an error, where you may not read that user: user(id:)'s rule).",
      resolve: (invitation, _args, ctx) => relatedUser(ctx, invitation.userId),
    }),
    code: t.exposeString('codeHint', {
      description:
        'The first characters of the redemption code, to tell invitations apart: not redeemable. The code itself is only in the mail to the invited address (invitation codes are secrets).',
    }),
    email: t.exposeString('email', { description: 'Email the invitation was sent to, lower-cased.' }),
    accountId: t.exposeID('accountId', {
      nullable: true,
      description: 'Account the roles are granted on, or null when no account existed.',
    }),
    account: t.field(
      accountRelation('The account the roles are granted on, or null (also null, with an error, where you may not read accounts).'),
    ),
    roleIds: t.exposeIDList('roleIds', { description: 'Roles granted on accountId.' }),
    roles: t.field({
      type: [Role],
      nullable: { list: false, items: true },
      description: 'The roles granted on accountId, in the order of roleIds; a role deleted since is left out.',
      resolve: async (invitation, _args, ctx) =>
        (await Promise.all(invitation.roleIds.map((id) => related(ctx, 'role', id)))).filter((role) => role !== null),
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'When the current code stops working.' }),
    redeemedAt: t.expose('redeemedAt', { type: 'DateTime', nullable: true, description: 'When it was redeemed; null until then.' }),
    status: t.field({
      type: InvitationStatus,
      description: 'Whether it was redeemed, can still be, or its code expired (a resend renews it).',
      resolve: (invitation) => invitationStatus(invitation),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
  }),
});

builder.objectField(User, 'invitation', (t) =>
  t.field({
    type: Invitation,
    nullable: true,
    description:
      'The open invitation of a PENDING user (to resend or delete it); null once they joined, or where you may not read invitations (with an error).',
    // Invitation's own rule refuses it where you may not read invitations.
    resolve: async (user, _args, ctx) => (user.status === 'pending' ? ((await openInvitationOf(ctx, user.id)) ?? null) : null),
  }),
);

const InvitationConnection = pagedConnection(Invitation, 'InvitationConnection', 'invitations');

const CreateInvitationInput = inputFrom('CreateInvitationInput', createInvitationInput, {
  description: 'A new invitation: who, and the roles they will hold on which account.',
  fields: {
    organisationId: 'Must be the organisation of the request (X-Service-Org).',
    email: 'Email of the person invited.',
    firstName: 'First name, 1 to 255 characters.',
    lastName: 'Last name, 1 to 255 characters.',
    roleIds: 'Roles of this organisation to grant on accountId; the inviter must hold all of their permissions there.',
    accountId: "Our addition: the account the roles are granted on. Default: the organisation's oldest account not deleted.",
  },
});

const RedeemInvitationInput = inputFrom('RedeemInvitationInput', redeemInvitationInput, {
  description: 'An invitation code and the password to sign in with.',
  fields: {
    // Optional in the graph although the schema requires it: the use case checks it (with the
    // password it requires when the request carries no session), so a body without it is named
    // beside a missing password (test/identity/invitations.test.ts "no body 400 naming both").
    code: { description: 'The code from the invitation mail (required).', required: false },
    password:
      "At least 8 characters: the password of the new account, or for an email that already has an account its current password. May be left out when the request carries that person's own session (Authorization: Bearer).",
  },
});

builder.queryFields((t) => ({
  invitations: t.field({
    type: InvitationConnection,
    nullable: true,
    description: 'Invitations of the organisation, newest first (GET /v1/user-invitations).',
    authScopes: READ,
    args: {
      ...t.arg.connectionArgs(),
      ...pageArgsFor(t),
      updatedSince: updatedSinceArg(t, 'invitations created, resent or redeemed', 'deleted ones leave the list'),
      status: t.arg({ type: InvitationStatus, description: 'Only invitations that stand so now.' }),
    },
    resolve: (_root, args, ctx) => listInvitations(ctx, args),
  }),
  invitation: t.field({
    type: Invitation,
    nullable: true,
    description: 'One invitation (GET /v1/user-invitations/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Invitation id.' }) },
    resolve: (_root, { id }, ctx) => getInvitation(ctx, id),
  }),
}));

const DeleteInvitationPayload = deletePayload('DeleteInvitation', 'invitation');

builder.objectField(DeleteInvitationPayload.type, 'deletedUserId', (t) =>
  t.id({
    nullable: true,
    description:
      'The pending user deleted with the invitation, for a cache to evict; null when the user stays (or userErrors says why not).',
    resolve: ({ touched }) => touched?.deletedUserId ?? null,
  }),
);

builder.mutationFields((t) => ({
  createInvitation: t.field({
    ...payload('CreateInvitation', 'invitation', Invitation, 'The invitation created.'),
    description: 'Invites a person: a pending user with the roles, the invitation, and a mail with the code (POST /v1/user-invitations).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateInvitationInput, required: true, description: 'The invitation.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createInvitation(ctx, input)),
  }),
  deleteInvitation: t.field({
    ...DeleteInvitationPayload,
    description: 'Deletes an invitation not yet redeemed, with its pending user and their roles (DELETE /v1/user-invitations/{id}).',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Invitation id.' }) },
    resolve: (_root, { id }, ctx) =>
      deleted(ctx, async () => {
        const { deletedUserId } = await deleteInvitation(ctx, id);
        return { id, touched: { deletedUserId } };
      }),
  }),
  resendInvitation: t.field({
    ...payload('ResendInvitation', 'invitation', Invitation, 'The invitation with its new code and expiry.'),
    description:
      'Replaces the code and the expiry and sends the mail again (POST /v1/user-invitations/{id}/resend). The old code stops working.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Invitation id.' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => resendInvitation(ctx, id)),
  }),
  redeemInvitation: t.field({
    ...payload('RedeemInvitation', 'session', SignInResultRef, "The session in the invitation's organisation."),
    description:
      "Accepts an invitation (POST /v1/auth/invitations/redeem): activates the user and answers a session in the invitation's organisation.",
    authScopes: { public: true },
    args: { input: t.arg({ type: RedeemInvitationInput, required: true, description: 'Code and password.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => redeemInvitation(ctx, input)),
  }),
}));
