import { getDatamodel } from '../generated/pothos-types.ts';
import type { Database } from './client.ts';

/**
 * The one place tenancy is enforced for data access. `tenantDatabase(db, organisationId)` is the
 * only database handle resolvers and services receive for a request: every read and write of a
 * tenant-owned model (every model with an organisationId column) is filtered by, or stamped
 * with, the request's organisation here, so no resolver can forget it. Relations between
 * tenant-owned rows are composite foreign keys (organisationId, id), so the database itself
 * refuses a row that points into another organisation.
 */

const datamodel = getDatamodel().datamodel.models;

/** Models with an organisationId column. */
export const TENANT_MODELS: ReadonlySet<string> = new Set(
  Object.entries(datamodel)
    .filter(([, model]) => model.fields.some((field) => field.name === 'organisationId'))
    .map(([name]) => name),
);

const WHERE_OPERATIONS = new Set([
  'findUnique',
  'findUniqueOrThrow',
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'count',
  'aggregate',
  'groupBy',
  'update',
  'updateMany',
  'updateManyAndReturn',
  'delete',
  'deleteMany',
]);

export class TenancyViolation extends Error {}

type Row = Record<string, unknown>;

function stamp(data: Row, organisationId: string, model: string): Record<string, unknown> {
  if (data.organisationId !== undefined && data.organisationId !== organisationId) {
    throw new TenancyViolation(`refusing to write a ${model} into another organisation`);
  }
  return { ...data, organisationId };
}

/** Scoped clients are stateless wrappers; one per organisation is kept (bounded) to save ~30 µs a request. */
const cache = new WeakMap<Database, Map<string, ReturnType<typeof scoped>>>();
const CACHE_SIZE = 1000;

export function tenantDatabase(db: Database, organisationId: string) {
  let byOrganisation = cache.get(db);
  if (!byOrganisation) cache.set(db, (byOrganisation = new Map<string, ReturnType<typeof scoped>>()));
  let client = byOrganisation.get(organisationId);
  if (!client) {
    if (byOrganisation.size >= CACHE_SIZE) byOrganisation.delete(byOrganisation.keys().next().value!);
    client = scoped(db, organisationId);
    byOrganisation.set(organisationId, client);
  }
  return client;
}

function scoped(db: Database, organisationId: string) {
  return db.$extends({
    name: 'tenant',
    query: {
      $allModels: {
        async $allOperations({ model, operation, args, query }) {
          // The arguments of any operation on any model: the rule reads and rewrites only these parts.
          const a = (args ?? {}) as { where?: Record<string, unknown>; data?: Row | Row[]; create?: Row };
          if (model === 'Organisation') {
            if (operation.startsWith('create') || operation === 'upsert' || operation.startsWith('delete')) {
              throw new TenancyViolation(`${operation} on Organisation is not available to a tenant`);
            }
            if (WHERE_OPERATIONS.has(operation)) a.where = { ...a.where, id: organisationId };
            return query(a);
          }
          if (!TENANT_MODELS.has(model)) return query(a);
          if (WHERE_OPERATIONS.has(operation)) {
            a.where = { ...a.where, organisationId };
          } else if (operation === 'create') {
            a.data = stamp((a.data ?? {}) as Row, organisationId, model);
          } else if (operation === 'createMany' || operation === 'createManyAndReturn') {
            a.data = (Array.isArray(a.data) ? a.data : [a.data ?? {}]).map((d) => stamp(d, organisationId, model));
          } else if (operation === 'upsert') {
            a.where = { ...a.where, organisationId };
            a.create = stamp(a.create ?? {}, organisationId, model);
          } else {
            throw new TenancyViolation(`unscoped operation ${operation} on ${model}`);
          }
          return query(a);
        },
      },
    },
  });
}

export type TenantDatabase = ReturnType<typeof scoped>;
/** The handle a transaction of a TenantDatabase hands its callback. */
export type TenantTransaction = Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0];
