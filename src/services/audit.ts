import { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import type { RequestContext } from '../context.ts';
import type { Database } from '../db/client.ts';
import type { TenantDatabase, TenantTransaction } from '../db/tenant.ts';
import { AppError } from '../errors.ts';
import type { AuditEntry, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { NEWEST_FIRST, paginate, type Page, type RawPageArgs } from '../pagination.ts';
import { instant } from '../time-zones.ts';
import { reference, validate } from '../validation.ts';

/**
 * The audit log: who changed what in the organisation's configuration and money, when, and from
 * where. Every service that makes such a change writes its entry with `recordAudit`, in the
 * transaction of the change, so an entry exists exactly when its change committed. The database
 * refuses to change or delete an entry (the migration's trigger); only `pruneAuditEntries`, run by
 * the worker, deletes entries past AUDIT_RETENTION_DAYS. test/platform/audit-log.test.ts.
 */

/** Who made a change: a signed-in user, an API key, an embed session, or the service itself. */
export const AUDIT_ACTOR_KINDS = ['user', 'api_key', 'embed_session', 'system'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

/** Every action the log records, `<target>.<verb>`; the target type is the part before the dot. docs/api.md lists them. */
export const AUDIT_ACTIONS = [
  'organisation.updated',
  'account.created',
  'account.updated',
  'account.deleted',
  'role.created',
  'role.updated',
  'role.deleted',
  'role_assignment.created',
  'role_assignment.deleted',
  'invitation.created',
  'invitation.resent',
  'invitation.deleted',
  'invitation.redeemed',
  'user.identity_linked',
  'identity_provider.created',
  'identity_provider.updated',
  'api_key.created',
  'api_key.revoked',
  'embed_session.created',
  'sales_channel.created',
  'sales_channel.updated',
  'channel_key.created',
  'channel_key.revoked',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.enabled',
  'webhook_endpoint.disabled',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.tested',
  'webhook_endpoint.recovered',
  'webhook_delivery.resent',
  'venue.created',
  'venue.updated',
  'event.created',
  'event.updated',
  'event.deleted',
  'event_occurrence.created',
  'event_occurrence.updated',
  'ticket_type.created',
  'ticket_type.updated',
  'ticket_type.deleted',
  'order.cancelled',
  'order.refunded',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The type of thing an action is about: the part before its dot (`event.updated` is about an `event`). */
export const targetTypeOf = (action: AuditAction): string => action.slice(0, action.indexOf('.'));

/** One changed field: its value before and after, or, for a secret, only that it changed. */
export type AuditChange = { before: unknown; after: unknown } | { changed: true };
export type AuditChanges = Record<string, AuditChange>;

/**
 * Names that hold secrets or their hashes (password hashes, key hashes, encrypted webhook secrets,
 * client secrets, tokens): their values never enter an entry, only `{changed: true}`. Columns are
 * matched by their end (`tokenEndpoint` is a URL); keys inside a JSON value anywhere (`client_secret`).
 * A `configuration` column (an identity provider's, the one table with one) is free-form JSON where
 * secrets live under whatever names a protocol uses (`private_jwk`, `passwd`): always only
 * `{changed: true}`.
 */
const SECRET_COLUMN = /(hash|ciphertext|password|secret|token|credential)$|^configuration$/i;
const SECRET_KEY = /(hash|ciphertext|password|secret|token|credential|key)/i;

/** Bookkeeping a row keeps for itself, not a change anyone made. */
const NOT_CHANGES = new Set([
  'id',
  'organisationId',
  'createdAt',
  'updatedAt',
  'lastUsedAt',
  'consecutiveFailures',
  'failingSince',
  'circuitOpenUntil',
]);

function holdsSecret(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsSecret);
  if (typeof value !== 'object' || value === null || value instanceof Date) return false;
  return Object.entries(value).some(([key, inner]) => SECRET_KEY.test(key) || holdsSecret(inner));
}

/** A value as an entry stores it: instants as ISO 8601, everything else as JSON has it. */
function stored(value: unknown): unknown {
  if (value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * The fields that differ between two versions of a row (null before: created; null after: gone),
 * each with both values; secrets, and JSON values that hold one, only as `{changed: true}`.
 * `only` limits the fields looked at; bookkeeping columns are never changes.
 */
export function changesBetween(before: object | null, after: object | null, only?: readonly string[]): AuditChanges {
  const old = (before ?? {}) as Record<string, unknown>;
  const now = (after ?? {}) as Record<string, unknown>;
  const fields = only ?? [...new Set([...Object.keys(old), ...Object.keys(now)])];
  const changes: AuditChanges = {};
  for (const field of fields) {
    if (NOT_CHANGES.has(field)) continue;
    const [was, is] = [stored(old[field]), stored(now[field])];
    if (JSON.stringify(was) === JSON.stringify(is)) continue;
    changes[field] = SECRET_COLUMN.test(field) || holdsSecret(was) || holdsSecret(is) ? { changed: true } : { before: was, after: is };
  }
  return changes;
}

/** An entry as a service hands it over; `recordAudit` adds who, from where and when. */
export interface AuditEntryInput {
  action: AuditAction;
  targetId: string;
  /** The account the target belongs to; null or absent for the organisation as a whole. */
  accountId?: string | null;
  changes?: AuditChanges;
  /** Another actor than the request's credential (a person accepting an invitation is the user it made). */
  actor?: { kind: AuditActorKind; id: string | null };
  /** The organisation, where the request names none (accepting an invitation). */
  organisationId?: string;
}

/** What of a request an entry records: a RequestContext is one; the worker's changes pass `systemActor(…)`. */
export interface AuditContext {
  organisation: { id: string } | null;
  principal: Principal | null;
  requestId?: string;
  clientIp?: string;
  userAgent?: string;
}

/** The service acting on its own (no request): the worker's changes. */
export function systemActor(organisationId: string): AuditContext {
  return { organisation: { id: organisationId }, principal: null };
}

function actorOf(principal: Principal | null): { kind: AuditActorKind; id: string | null } {
  switch (principal?.kind) {
    case 'staff':
      return { kind: 'user', id: principal.userId ?? principal.personId };
    case 'apiKey':
      return { kind: 'api_key', id: principal.apiKeyId };
    case 'embed':
      return { kind: 'embed_session', id: principal.sessionId };
    default:
      return { kind: 'system', id: null };
  }
}

/** A transaction (or, for a change of one statement's own, a handle) of either database handle. */
type Writer =
  | TenantDatabase
  | Database
  | Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0]
  | Parameters<Parameters<Database['$transaction']>[0]>[0];

/**
 * Writes one audit entry through `tx`, the transaction of the change it records: the entry commits
 * with the change or not at all. The one way entries are written.
 */
export async function recordAudit(tx: Writer, ctx: AuditContext, entry: AuditEntryInput): Promise<AuditEntry> {
  const organisationId = entry.organisationId ?? ctx.organisation?.id;
  if (!organisationId) throw new AppError('INTERNAL', 'an audit entry without an organisation');
  const actor = entry.actor ?? actorOf(ctx.principal);
  // Both handles' clients have the same model API; the tenant-scoped one also checks the organisation.
  return (tx as Database).auditEntry.create({
    data: {
      id: newId('auditEntry'),
      organisationId,
      accountId: entry.accountId ?? null,
      actorKind: actor.kind,
      actorId: actor.id,
      action: entry.action,
      targetType: targetTypeOf(entry.action),
      targetId: entry.targetId,
      changes: (entry.changes ?? {}) as Prisma.InputJsonObject,
      requestId: ctx.requestId ?? null,
      clientAddress: ctx.clientIp || null,
      userAgent: ctx.userAgent ?? null,
    },
  });
}

/**
 * Runs `change` in a transaction of the request's database and records the entry `entryOf` makes
 * of its result in the same transaction (none when it answers null): for a change that needed no
 * transaction of its own before it was audited.
 */
export async function audited<T>(
  ctx: RequestContext,
  change: (tx: Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0]) => Promise<T>,
  entryOf: (result: T) => AuditEntryInput | null,
): Promise<T> {
  return ctx.db.$transaction(async (tx) => {
    const result = await change(tx);
    const entry = entryOf(result);
    if (entry) await recordAudit(tx, ctx, entry);
    return result;
  });
}

/** Tables whose rows `auditedChange` changes. */
export type ChangedTable =
  | 'accounts'
  | 'api_keys'
  | 'channel_keys'
  | 'event_occurrences'
  | 'events'
  | 'invitations'
  | 'organisations'
  | 'roles'
  | 'sales_channels'
  | 'ticket_types'
  | 'venues'
  | 'webhook_endpoints';

/**
 * Locks the row `id` of `table` in the organisation until the transaction ends, as its UPDATE would
 * (FOR NO KEY UPDATE): what the transaction reads of it next is what its change replaces. The
 * organisation's own row is its id.
 */
export async function lockForChange(tx: TenantTransaction, organisationId: string, table: ChangedTable, id: string): Promise<void> {
  if (table === 'organisations') {
    await tx.$queryRaw`SELECT 1 FROM "organisations" WHERE "id" = ${organisationId} FOR NO KEY UPDATE`;
    return;
  }
  await tx.$queryRawUnsafe(`SELECT 1 FROM "${table}" WHERE "organisationId" = $1 AND "id" = $2 FOR NO KEY UPDATE`, organisationId, id);
}

/**
 * `audited` for a change of one existing row: its transaction locks the row, then reads it again
 * (`read`), so the entry's before is what this change replaced, even when another change of the row
 * committed after the request first read it (to judge rights and input). Of concurrent changes of
 * one row, each is recorded in turn with the one before it as its before
 * (test/platform/audit-coverage.test.ts). A row gone meanwhile (`read` answers null: it leaves out
 * rows deleted softly too) is NOT_FOUND.
 */
export async function auditedChange<R extends object, T>(
  ctx: RequestContext,
  row: { table: ChangedTable; id: string; read: (tx: TenantTransaction) => Promise<R | null> },
  change: (tx: TenantTransaction, before: R) => Promise<T>,
  entryOf: (result: T, before: R) => AuditEntryInput | null,
): Promise<T> {
  return ctx.db.$transaction(async (tx) => {
    await lockForChange(tx, ctx.organisation!.id, row.table, row.id);
    const before = await row.read(tx);
    if (!before) throw AppError.notFound('Not found: it was deleted meanwhile.');
    const result = await change(tx, before);
    const entry = entryOf(result, before);
    if (entry) await recordAudit(tx, ctx, entry);
    return result;
  });
}

// ---------------------------------------------------------------------------------------------
// Reading the log

/**
 * May the caller read entries about `accountId`? audit.read on that account; an entry about the
 * organisation as a whole (no account) needs audit.read on every account.
 */
function mayRead(ctx: RequestContext, accountId: string | null): boolean {
  return ctx.access.allows('audit', 'read', accountId);
}

/** The entries the caller may read, as a condition. */
function readableWhere(ctx: RequestContext): Prisma.AuditEntryWhereInput {
  const accounts = ctx.access.accountsFor('audit', 'read');
  return accounts === 'all' ? {} : { accountId: { in: accounts } };
}

const id = reference;

export const listAuditEntriesFilters = z
  .object({
    actorKind: z.enum(AUDIT_ACTOR_KINDS, { error: `One of ${AUDIT_ACTOR_KINDS.join(', ')}.` }).nullish(),
    actorId: id.nullish(),
    targetType: z.string().min(1).max(100).nullish(),
    targetId: id.nullish(),
    action: z.enum(AUDIT_ACTIONS, { error: 'An action of the audit log (docs/api.md, "Audit log").' }).nullish(),
    createdFrom: instant.nullish(),
    createdTo: instant.nullish(),
  })
  .superRefine(({ createdFrom, createdTo }, issue) => {
    // Runs when a bound itself was refused too (zod checks on): only two instants are compared.
    if (createdFrom instanceof Date && createdTo instanceof Date && createdFrom.getTime() > createdTo.getTime()) {
      issue.addIssue({ code: 'custom', path: ['createdTo'], message: 'must not be before createdFrom' });
    }
  });

export type ListAuditEntriesArgs = RawPageArgs & { [K in keyof z.input<typeof listAuditEntriesFilters>]?: unknown };

/**
 * The entries the caller may read, newest first, filtered by actor (kind and id), target (type and
 * id), action and a time range (both ends included).
 */
export async function listAuditEntries(ctx: RequestContext, args: ListAuditEntriesArgs): Promise<Page<AuditEntry>> {
  const { actorKind, actorId, targetType, targetId, action, createdFrom, createdTo, ...page } = args;
  const input = validate(listAuditEntriesFilters, { actorKind, actorId, targetType, targetId, action, createdFrom, createdTo });
  const where: Prisma.AuditEntryWhereInput = {
    ...readableWhere(ctx),
    ...(input.actorKind ? { actorKind: input.actorKind } : {}),
    ...(input.actorId ? { actorId: input.actorId } : {}),
    ...(input.targetType ? { targetType: input.targetType } : {}),
    ...(input.targetId ? { targetId: input.targetId } : {}),
    ...(input.action ? { action: input.action } : {}),
    ...(input.createdFrom || input.createdTo
      ? { createdAt: { ...(input.createdFrom ? { gte: input.createdFrom } : {}), ...(input.createdTo ? { lte: input.createdTo } : {}) } }
      : {}),
  };
  return paginate(
    page,
    NEWEST_FIRST,
    (keyset) => ctx.db.auditEntry.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.auditEntry.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

/** One entry of the request's organisation if the caller may read it, else null. */
export async function auditEntryVisibleTo(ctx: RequestContext, id: string): Promise<AuditEntry | null> {
  const entry = await ctx.db.auditEntry.findUnique({ where: { id } });
  return entry && mayRead(ctx, entry.accountId) ? entry : null;
}

/** One entry the caller may read; any other id is NOT_FOUND. */
export async function getAuditEntry(ctx: RequestContext, id: string): Promise<AuditEntry> {
  const entry = await auditEntryVisibleTo(ctx, id);
  if (!entry) throw AppError.notFound('Audit entry not found.');
  return entry;
}

/** An entry's changes as a list, in the order they were recorded. */
export function changeList(entry: Pick<AuditEntry, 'changes'>): Array<{ field: string; before: unknown; after: unknown; secret: boolean }> {
  const changes = (entry.changes ?? {}) as AuditChanges;
  return Object.entries(changes).map(([field, change]) =>
    'changed' in change
      ? { field, before: null, after: null, secret: true }
      : { field, before: change.before, after: change.after, secret: false },
  );
}

// ---------------------------------------------------------------------------------------------
// Retention

/**
 * Deletes entries older than `retentionDays` (the worker runs this under its pruning lease). The
 * one deletion the table's trigger lets through: the transaction says it prunes, and says it only
 * for itself (SET LOCAL ends with the transaction).
 */
export async function pruneAuditEntries(db: Database, retentionDays: number): Promise<number> {
  const [, deleted] = await db.$transaction([
    db.$executeRawUnsafe(`SET LOCAL service.audit_prune = 'on'`),
    db.$executeRaw`DELETE FROM audit_entries WHERE "createdAt" < now() - make_interval(days => ${retentionDays}::int)`,
  ]);
  return deleted;
}
