import { z } from 'zod';
import { hashPassword } from '../auth/passwords.ts';
import type { Database } from '../db/client.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError, issuesFrom } from '../errors.ts';
import { newId } from '../ids.ts';
import { CURRENT_VERSION } from '../versions.ts';
import { SYSTEM_ROLES } from './system-roles.ts';

export const ORGANISATION_SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const bootstrapInput = z.object({
  orgSlug: z.string().regex(ORGANISATION_SLUG, 'lower-case letters, digits and inner hyphens, 1 to 63 characters'),
  orgName: z.string().trim().min(1).max(255),
  email: z.email().transform((email) => email.toLowerCase()),
  password: z.string().min(8, 'at least 8 characters').max(1024),
  firstName: z.string().trim().min(1).max(255).optional(),
  lastName: z.string().trim().min(1).max(255).optional(),
  accountName: z.string().trim().min(1).max(255).default('Main account'),
});

export type BootstrapInput = z.input<typeof bootstrapInput>;

export interface BootstrapResult {
  organisation: { id: string; slug: string; name: string; apiVersion: string };
  account: { id: string; name: string };
  user: { id: string; personId: string; email: string };
  roles: Array<{ id: string; systemKey: string; name: string }>;
  assignment: { id: string; roleId: string; accountId: string };
}

/**
 * Creates an organisation with its system roles, a first account, and a first administrator
 * (organisation admin on that account), in one transaction. A person who already exists (same
 * email) becomes the administrator; their existing password is kept.
 */
export async function bootstrapOrganisation(db: Database, raw: BootstrapInput): Promise<BootstrapResult> {
  const parsed = bootstrapInput.safeParse(raw);
  if (!parsed.success) throw AppError.validation(issuesFrom(parsed.error.issues));
  const input = parsed.data;
  const passwordHash = await hashPassword(input.password);

  try {
    return await db.$transaction(async (tx) => {
      const organisation = await tx.organisation.create({
        data: { id: newId('organisation'), slug: input.orgSlug, name: input.orgName, apiVersion: CURRENT_VERSION },
      });
      const roles = [];
      // A millisecond apart, in SYSTEM_ROLES order: roles list by creation, and two made within one
      // millisecond would otherwise list in the order of their random ids.
      const created = Date.now();
      for (const [index, role] of SYSTEM_ROLES.entries()) {
        roles.push(
          await tx.role.create({
            data: {
              id: newId('role'),
              createdAt: new Date(created + index),
              organisationId: organisation.id,
              name: role.name,
              description: role.description,
              permissions: [...role.permissions],
              isSystemRole: true,
              systemKey: role.systemKey,
            },
          }),
        );
      }
      const account = await tx.account.create({
        data: { id: newId('account'), organisationId: organisation.id, name: input.accountName },
      });
      const person =
        (await tx.person.findUnique({ where: { realm_email: { realm: 'global', email: input.email } } })) ??
        (await tx.person.create({
          data: {
            id: newId('person'),
            email: input.email,
            firstName: input.firstName ?? null,
            lastName: input.lastName ?? null,
          },
        }));
      await tx.passwordCredential.upsert({
        where: { personId: person.id },
        create: { personId: person.id, passwordHash },
        update: {},
      });
      const user = await tx.user.create({
        data: {
          id: newId('user'),
          organisationId: organisation.id,
          personId: person.id,
          email: person.email,
          firstName: person.firstName,
          lastName: person.lastName,
          status: 'active',
        },
      });
      const adminRole = roles.find((role) => role.systemKey === 'organisation_admin')!;
      const assignment = await tx.roleAssignment.create({
        data: {
          id: newId('roleAssignment'),
          organisationId: organisation.id,
          userId: user.id,
          accountId: account.id,
          roleId: adminRole.id,
        },
      });
      return {
        organisation: {
          id: organisation.id,
          slug: organisation.slug,
          name: organisation.name,
          apiVersion: organisation.apiVersion,
        },
        account: { id: account.id, name: account.name },
        user: { id: user.id, personId: person.id, email: person.email },
        roles: roles.map((role) => ({ id: role.id, systemKey: role.systemKey!, name: role.name })),
        assignment: { id: assignment.id, roleId: assignment.roleId, accountId: assignment.accountId },
      };
    });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('CONFLICT', `An organisation with slug "${input.orgSlug}" already exists.`);
    }
    throw error;
  }
}
