import { getUser, listUsers } from '../../src/services/users.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { pagedConnection } from '../pagination.ts';
import { statusEnum } from './common.ts';

/** A user as src/services/users.ts selects one (USER_FIELDS). */
export interface UserRow {
  id: string;
  personId: string | null;
  email: string;
  firstName: string | null;
  lastName: string | null;
  status: 'pending' | 'active' | 'disabled';
  externalUserId: string | null;
  createdAt: Date;
  identityProvider: { providerType: string } | null;
}

export const UserStatus = statusEnum('UserStatus', 'user', 'Where a user of the organisation stands.', {
  pending: 'Invited, and has not redeemed the invitation yet.',
  active: 'Signs in and acts with the roles they hold.',
  disabled: 'May not sign in to this organisation.',
});

export const User = builder.objectRef<UserRow>('User').implement({
  description: 'A person as a user of this organisation (usr_): whom roles are assigned to.',
  interfaces: [Node],
  fields: (t) => ({
    personId: t.exposeID('personId', {
      nullable: true,
      description: 'The person behind the user (their sign-in across organisations); null for an invitee who has not signed in yet.',
    }),
    email: t.expose('email', { type: 'EmailAddress', description: 'Email.' }),
    firstName: t.exposeString('firstName', { nullable: true, description: 'First name, or null.' }),
    lastName: t.exposeString('lastName', { nullable: true, description: 'Last name, or null.' }),
    status: t.field({ type: UserStatus, description: 'Invited, active or disabled.', resolve: (user) => user.status }),
    identityProvider: t.string({
      nullable: true,
      description: 'Type of the identity provider the user signs in with, or null.',
      resolve: (user) => user.identityProvider?.providerType ?? null,
    }),
    externalUserId: t.exposeString('externalUserId', { nullable: true, description: "The user's id at that identity provider, or null." }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the user was added.' }),
  }),
});

const UserConnection = pagedConnection(User, 'UserConnection', 'users');

builder.queryFields((t) => ({
  viewer: t.field({
    type: User,
    nullable: true,
    description:
      'You, as a user of this organisation: your status, and your roles where you may read role assignments (every role you hold, wherever: myRoles). Signed-in staff only (me is the person, across organisations).',
    authScopes: { $all: { signedInUser: true, organisation: true } },
    resolve: (_root, _args, ctx) => {
      const userId = ctx.principal?.kind === 'staff' ? ctx.principal.userId : null;
      return userId ? getUser(ctx, userId) : null;
    },
  }),
  users: t.field({
    type: UserConnection,
    nullable: true,
    description:
      "A page of the organisation's users you may read, oldest first: every user where you may read role assignments on every account, else those holding a role on an account where you may. user(id:)'s rule, as a list.",
    authScopes: { $all: { organisation: true, permission: 'role_assignments.read' } },
    args: {
      ...t.arg.connectionArgs(),
      accountId: t.arg.id({ description: 'Only users holding a role on this account (acc_).' }),
      roleId: t.arg.id({ description: 'Only users holding this role (rol_); with accountId, holding it on that account.' }),
      status: t.arg({ type: UserStatus, description: 'Only users in this status.' }),
      search: t.arg.string({ description: 'Case-insensitive text in the email, first or last name (1 to 200 characters).' }),
    },
    resolve: (_root, args, ctx) => listUsers(ctx, args),
  }),
  user: t.field({
    type: User,
    nullable: true,
    description: 'One user of the organisation: yourself, or a user holding a role on an account where you may read role assignments.',
    authScopes: { organisation: true },
    args: { id: t.arg.id({ required: true, description: 'User id (usr_).' }) },
    resolve: (_root, { id }, ctx) => getUser(ctx, String(id)),
  }),
}));
