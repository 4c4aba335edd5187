import { getUser } from '../../src/services/users.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';

/** A user as src/services/users.ts selects one (USER_FIELDS). */
export interface UserRow {
  id: string;
  personId: string | null;
  email: string;
  firstName: string | null;
  lastName: string | null;
  externalUserId: string | null;
  createdAt: Date;
  identityProvider: { providerType: string } | null;
}

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
    identityProvider: t.string({
      nullable: true,
      description: 'Type of the identity provider the user signs in with, or null.',
      resolve: (user) => user.identityProvider?.providerType ?? null,
    }),
    externalUserId: t.exposeString('externalUserId', { nullable: true, description: "The user's id at that identity provider, or null." }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the user was added.' }),
  }),
});

builder.queryFields((t) => ({
  user: t.field({
    type: User,
    nullable: true,
    description: 'One user of the organisation: yourself, or a user holding a role on an account where you may read role assignments.',
    authScopes: { organisation: true },
    args: { id: t.arg.id({ required: true, description: 'User id (usr_).' }) },
    resolve: (_root, { id }, ctx) => getUser(ctx, String(id)),
  }),
}));
