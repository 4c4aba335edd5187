import { builder } from '../builder.ts';

/** A person as sign-in and `me` answer them. */
export interface PersonView {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  identityProvider?: string | null;
  externalUserId?: string | null;
}

/**
 * One type for the person: the answer of a sign-in and of `me`. A person is the same across the
 * organisations they belong to; in each they are a `User` (usr_, its own id).
 */
export const Person = builder.objectRef<PersonView>('Person').implement({
  description: 'A person who signs in (usr_): the same across the organisations they belong to.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Person id (usr_); their user in an organisation has an id of its own.' }),
    email: t.expose('email', { type: 'EmailAddress', description: 'Sign-in email, lower-cased.' }),
    firstName: t.exposeString('firstName', { nullable: true, description: 'First name, or null.' }),
    lastName: t.exposeString('lastName', { nullable: true, description: 'Last name, or null.' }),
    identityProvider: t.string({
      nullable: true,
      description: 'Type of the identity provider the person signs in with in this organisation; null without one or outside one.',
      resolve: (person) => person.identityProvider ?? null,
    }),
    externalUserId: t.string({
      nullable: true,
      description: "The person's id at that identity provider, or null.",
      resolve: (person) => person.externalUserId ?? null,
    }),
  }),
});
