import type { TenantDatabase } from '../db/tenant.ts';
import { AppError } from '../errors.ts';

/** The permission that makes an organisation administrator (the system role "Organisation admin" holds it). */
export const ADMINISTRATOR_PERMISSION = '*.*:all';

type Transaction = Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0];

/** Whether any of these permission lists makes its holder an administrator. */
export function grantsAdministration(permissionLists: ReadonlyArray<readonly string[]>): boolean {
  return permissionLists.some((permissions) => permissions.includes(ADMINISTRATOR_PERMISSION));
}

/**
 * An organisation never loses its last administrator: without one, nobody can grant anything any
 * more. Called inside the transaction of a change that removed administrator rights, after the
 * change: it refuses (409) when no active user holds them any longer, and the transaction rolls
 * back. The advisory lock serialises such changes per organisation, and the count runs after it
 * (a fresh snapshot under READ COMMITTED), so two concurrent removals of the last two
 * administrators cannot both see the other one still there.
 */
export async function assertAdministratorRemains(tx: Transaction, organisationId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`administrators:${organisationId}`}))`;
  const rows = await tx.$queryRaw<Array<{ remains: boolean }>>`
    SELECT EXISTS (
      SELECT 1 FROM users u
      JOIN role_assignments a ON a."userId" = u.id AND a."organisationId" = u."organisationId"
      JOIN roles r ON r.id = a."roleId" AND r."organisationId" = a."organisationId"
      WHERE u."organisationId" = ${organisationId} AND u.status = 'active' AND NOT r."isDeleted"
        AND ${ADMINISTRATOR_PERMISSION} = ANY (r.permissions)
    ) AS remains`;
  if (!rows[0]?.remains) {
    throw new AppError(
      'CONFLICT',
      "This change would remove the organisation's last administrator (an active user holding *.*:all); grant those rights to someone else first.",
    );
  }
}
