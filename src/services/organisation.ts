import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { organisationOf } from '../context.ts';
import { Prisma } from '../generated/prisma/client.ts';
import { requireUsableVersion } from '../versions.ts';
import { jsonObjectWithin, validate } from '../validation.ts';
import { auditedChange, changesBetween } from './audit.ts';

export const colour = z.string().regex(/^#[0-9A-Fa-f]{6}$/, '# followed by six hex digits');

export const updateOrganisationInput = z
  .strictObject({
    name: z.string().trim().min(1).max(255),
    primaryColor: colour.nullable(),
    secondaryColor: colour.nullable(),
    logoUrl: z
      .url({ protocol: /^https?$/, error: 'an http(s) URI' })
      .max(2048)
      .nullable(),
    // Stored, audited and answered whole on every read of the organisation: bounded like an
    // identity provider's configuration.
    metadata: jsonObjectWithin(16 * 1024).nullable(),
    apiVersion: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a dated version, YYYY-MM-DD'),
  })
  .partial();

export async function getOrganisation(ctx: RequestContext) {
  return ctx.db.organisation.findUniqueOrThrow({ where: { id: organisationOf(ctx).id } });
}

/** docs/spec/service-spec.md §4 "Update organisation"; an unknown or sunset apiVersion is UNSUPPORTED_VERSION. */
export async function updateOrganisation(ctx: RequestContext, raw: Record<string, unknown>) {
  const input = validate(updateOrganisationInput, raw);
  if (input.apiVersion !== undefined) requireUsableVersion(input.apiVersion, 'apiVersion');
  const { metadata, ...rest } = input;
  const id = organisationOf(ctx).id;
  const updated = await auditedChange(
    ctx,
    { table: 'organisations', id, read: (tx) => tx.organisation.findUnique({ where: { id } }) },
    (tx) =>
      tx.organisation.update({
        where: { id },
        data: {
          ...rest,
          ...(metadata === undefined ? {} : { metadata: metadata === null ? Prisma.DbNull : (metadata as Prisma.InputJsonObject) }),
        },
      }),
    (after, before) => ({ action: 'organisation.updated', targetId: after.id, changes: changesBetween(before, after) }),
  );
  forgetCachedAccess(ctx);
  return updated;
}
