import type { TenantTransaction } from '../db/tenant.ts';
import { Prisma } from '../generated/prisma/client.ts';
import { changesBetween, recordAudit, type AuditContext, type AuditEntryInput } from './audit.ts';

/**
 * Role assignments made or taken away as part of another change (an invitation's roles, a deleted
 * role's or invitation's holders) are audited one by one, as assigning and removing are: who held
 * which role where stays readable in the log, whichever change ended it.
 */

interface Assignment {
  id: string;
  userId: string;
  accountId: string;
  roleId: string;
}

/** The audit entry of an assignment made or removed: who holds which role where. */
export function assignmentEntry(action: 'role_assignment.created' | 'role_assignment.deleted', assignment: Assignment): AuditEntryInput {
  const fields = ['userId', 'accountId', 'roleId'];
  const changes =
    action === 'role_assignment.created' ? changesBetween(null, assignment, fields) : changesBetween(assignment, null, fields);
  return { action, targetId: assignment.id, accountId: assignment.accountId, changes };
}

/**
 * Deletes the assignments of a role or of a user in the transaction `tx`, each with its entry, and
 * answers them: the rows the statement deleted, so an assignment made meanwhile is neither missed
 * nor recorded twice.
 */
export async function removeAssignments(
  tx: TenantTransaction,
  ctx: AuditContext,
  of: { roleId: string } | { userId: string },
): Promise<Assignment[]> {
  const [column, value] = 'roleId' in of ? ['roleId', of.roleId] : ['userId', of.userId];
  const removed = await tx.$queryRaw<Assignment[]>`
    DELETE FROM "role_assignments" WHERE "organisationId" = ${ctx.organisation!.id} AND ${Prisma.raw(`"${column}"`)} = ${value}
    RETURNING "id", "userId", "accountId", "roleId"`;
  for (const assignment of removed) await recordAudit(tx, ctx, assignmentEntry('role_assignment.deleted', assignment));
  return removed;
}
