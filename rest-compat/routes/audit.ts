import { z } from 'zod';
import type { RestRoute } from '../route.ts';
import { PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { listQuery } from '../../src/pagination.ts';
import { AUDIT_ACTIONS, AUDIT_ACTOR_KINDS, changeList } from '../../src/services/audit.ts';
import { instant } from '../../src/time-zones.ts';

const ENTRY_FIELDS =
  'id organisationId accountId actorKind actorId action targetType targetId changes requestId clientAddress userAgent createdAt';

const auditEntry = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string().nullable(),
  actor: z.object({ type: z.enum(AUDIT_ACTOR_KINDS), id: z.string().nullable() }),
  action: z.string(),
  target: z.object({ type: z.string(), id: z.string() }),
  changes: z.array(
    z.object({
      field: z.string(),
      before: z.unknown(),
      after: z.unknown(),
      secret: z.boolean().describe('A secret: only that it changed is recorded; before and after are null.'),
    }),
  ),
  requestId: z.string().nullable(),
  clientAddress: z.string().nullable(),
  userAgent: z.string().nullable(),
  createdAt: z.string(),
});

/** The contract's query words: actorType, from and to are the graph's actorKind, createdFrom and createdTo. */
const filters = z.object({
  actorType: z.enum(AUDIT_ACTOR_KINDS).optional(),
  actorId: z.string().min(1).max(100).optional(),
  targetType: z.string().min(1).max(100).optional(),
  targetId: z.string().min(1).max(100).optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  from: instant.optional(),
  to: instant.optional(),
});

interface EntryAnswer {
  actorKind: string;
  actorId: string | null;
  targetType: string;
  targetId: string;
  changes: Record<string, never>;
}

/** An entry in the contract's shape: actor and target as objects, changes as a list. */
function shaped({ actorKind, actorId, targetType, targetId, ...entry }: EntryAnswer) {
  return {
    ...entry,
    actor: { type: actorKind, id: actorId },
    target: { type: targetType, id: targetId },
    changes: changeList(entry),
  };
}

export const auditRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/audit-entries',
    summary: `List the audit entries you may read (audit.read on their account; on every account for the organisation's own), newest first. Filters: actorType (${AUDIT_ACTOR_KINDS.join(', ')}) and actorId, targetType and targetId, action, from and to (ISO 8601 instants, both included).`,
    tag: 'Audit log',
    organisation: true,
    operation: `query AuditEntries($page: Int, $limit: Int, $actorKind: AuditActorKind, $actorId: ID, $targetType: String, $targetId: ID,
      $action: String, $createdFrom: DateTime, $createdTo: DateTime) {
      auditEntries(page: $page, limit: $limit, actorKind: $actorKind, actorId: $actorId, targetType: $targetType, targetId: $targetId,
        action: $action, createdFrom: $createdFrom, createdTo: $createdTo) {
        nodes { ${ENTRY_FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(filters),
    bind: {
      page: 'query.page',
      limit: 'query.limit',
      actorKind: 'query.actorType',
      actorId: 'query.actorId',
      targetType: 'query.targetType',
      targetId: 'query.targetId',
      action: 'query.action',
      createdFrom: 'query.from',
      createdTo: 'query.to',
    },
    result: (data) => ({ auditEntries: data.auditEntries.nodes.map(shaped), pagination: data.auditEntries.pagination }),
    response: z.object({ auditEntries: z.array(auditEntry), pagination }),
  },
];
