import type { GraphQLResolveInfo } from 'graphql';
import type { RequestContext } from '../src/context.ts';
import { AppError } from '../src/errors.ts';
import { MAX_LIMIT } from '../src/pagination.ts';
import { builder } from './builder.ts';

/**
 * Global object identification: every entity is a `Node` whose id is unique across the whole
 * graph, because each id's prefix names its entity (src/ids.ts) and each entity has one type.
 * `node(id:)` and `nodes(ids:)` answer any of them, each through the root field that reads that
 * entity alone: the same scopes, the same account rules, the same NOT_FOUND
 * (test/platform/node.test.ts).
 */

interface NodeKind {
  /** The entity's one GraphQL type. */
  type: string;
  /** The root field that reads one of them by `id`, and so decides who may. */
  field: string;
}

/** Every entity a client can ask for by id, by its id's prefix. */
const NODE_KINDS: Record<string, NodeKind> = {
  acc: { type: 'Account', field: 'account' },
  usr: { type: 'User', field: 'user' },
  rol: { type: 'Role', field: 'role' },
  uar: { type: 'RoleAssignment', field: 'roleAssignment' },
  oak: { type: 'ApiKey', field: 'apiKey' },
  idp: { type: 'IdentityProvider', field: 'identityProvider' },
  inv: { type: 'Invitation', field: 'invitation' },
  vnu: { type: 'Venue', field: 'venue' },
  evt: { type: 'Event', field: 'event' },
  eoc: { type: 'EventOccurrence', field: 'eventOccurrence' },
  tkt: { type: 'TicketType', field: 'ticketType' },
  sch: { type: 'SalesChannel', field: 'salesChannel' },
  whe: { type: 'WebhookEndpoint', field: 'webhookEndpoint' },
  whd: { type: 'WebhookDelivery', field: 'webhookDelivery' },
  wev: { type: 'WebhookEvent', field: 'webhookEvent' },
  cus: { type: 'Customer', field: 'customer' },
  ord: { type: 'Order', field: 'order' },
  pas: { type: 'Pass', field: 'pass' },
  aud: { type: 'AuditEntry', field: 'auditEntry' },
};

/**
 * Entities read through their parent: the parent's root field decides (an order line is shown to
 * whoever may read its order), then the entity itself is read.
 */
interface NestedKind {
  type: string;
  parent: string;
  /** The entity's row and its parent's id, or null when there is none. */
  find: (ctx: RequestContext, id: string) => Promise<{ row: { id: string }; parentId: string } | null>;
}

const NESTED_KINDS: Record<string, NestedKind> = {
  oli: {
    type: 'OrderLineItem',
    parent: 'order',
    find: async (ctx, id) => withParent(await ctx.db.orderLineItem.findUnique({ where: { id } }), (row) => row.orderId),
  },
  pay: {
    type: 'Payment',
    parent: 'order',
    find: async (ctx, id) => withParent(await ctx.db.payment.findUnique({ where: { id } }), (row) => row.orderId),
  },
  red: {
    type: 'Redemption',
    parent: 'pass',
    find: async (ctx, id) => withParent(await ctx.db.redemption.findUnique({ where: { id } }), (row) => row.passId),
  },
  wha: {
    type: 'WebhookAttempt',
    parent: 'webhookDelivery',
    find: async (ctx, id) => {
      // An attempt is shown under its delivery's account.
      const row = await ctx.db.webhookAttempt.findUnique({ where: { id }, include: { delivery: { select: { accountId: true } } } });
      return row && { row: { ...row, accountId: row.delivery.accountId }, parentId: row.deliveryId };
    },
  },
  schk: {
    type: 'ChannelKey',
    parent: 'salesChannel',
    find: async (ctx, id) => withParent(await ctx.db.channelKey.findUnique({ where: { id } }), (row) => row.channelId),
  },
};

function withParent<R extends { id: string }>(row: R | null, parentOf: (row: R) => string) {
  return row ? { row, parentId: parentOf(row) } : null;
}

/** The organisation is read by `organisation`, which takes no id: only the caller's own answers. */
const ORGANISATION = { prefix: 'org', type: 'Organisation', field: 'organisation' };

/** The type of an entity, from its id's prefix. */
export function nodeTypeOf(id: string): string | undefined {
  const prefix = id.slice(0, id.indexOf('_'));
  if (prefix === ORGANISATION.prefix) return ORGANISATION.type;
  return NODE_KINDS[prefix]?.type ?? NESTED_KINDS[prefix]?.type;
}

export const Node = builder.interfaceRef<{ id: string }>('Node').implement({
  description: 'An entity with an id unique across the graph; `node(id:)` reads any of them again.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Globally unique id; its prefix names the type (evt_ is an Event).' }),
  }),
  resolveType: (value) => nodeTypeOf(value.id) ?? null,
});

/** The types the node fields serve, for the schema test that every entity is one. */
export const NODE_TYPES = [
  ORGANISATION.type,
  ...Object.values(NODE_KINDS).map((kind) => kind.type),
  ...Object.values(NESTED_KINDS).map((kind) => kind.type),
];

const notFound = (id: string) => AppError.notFound(`No node with id ${JSON.stringify(id.slice(0, 100))}.`);

/** Runs a root field's own resolver (its scopes and rules included) with `args`. */
async function viaRootField(field: string, args: Record<string, unknown>, ctx: RequestContext, info: GraphQLResolveInfo) {
  const root = info.schema.getQueryType()?.getFields()[field];
  if (!root?.resolve) throw new AppError('INTERNAL', `The root field ${field} is missing.`);
  return (await root.resolve({}, args, ctx, info)) as { id: string } | null;
}

/** One entity, read as the root field that owns it reads it, or an error. */
async function load(id: string, ctx: RequestContext, info: GraphQLResolveInfo): Promise<{ id: string }> {
  const prefix = id.slice(0, id.indexOf('_'));
  if (prefix === ORGANISATION.prefix) {
    const organisation = await viaRootField(ORGANISATION.field, {}, ctx, info);
    if (organisation?.id !== id) throw notFound(id);
    return organisation;
  }
  const kind = NODE_KINDS[prefix];
  if (kind) {
    const entity = await viaRootField(kind.field, { id }, ctx, info);
    if (!entity) throw notFound(id);
    return entity;
  }
  const nested = NESTED_KINDS[prefix];
  const found = nested && (await nested.find(ctx, id));
  if (!nested || !found) throw notFound(id);
  if (!(await viaRootField(nested.parent, { id: found.parentId }, ctx, info))) throw notFound(id);
  return found.row;
}

/**
 * The entity an id names for a relation that may name any kind (`AuditEntry.target`), read as
 * node(id:) reads it: null when there is none (deleted, or a kind that is not a Node), a refusal
 * at the field's own path.
 */
export async function relatedNode(id: string | null, ctx: RequestContext, info: GraphQLResolveInfo): Promise<{ id: string } | null> {
  if (!id) return null;
  try {
    return await load(id, ctx, info);
  } catch (error) {
    if (error instanceof AppError && error.code === 'NOT_FOUND') return null;
    throw error;
  }
}

/** A refusal as an item of a list whose items answer on their own (GraphQL puts its error at the index). */
export const asError = (reason: unknown): Error => (reason instanceof Error ? reason : new Error(String(reason)));

builder.queryFields((t) => ({
  node: t.field({
    type: Node,
    nullable: true,
    description:
      'Any entity by its id, read as its own root field reads it (`event(id:)` for evt_): unknown ids and ids the caller may not read are null with an error.',
    authScopes: { public: true },
    args: { id: t.arg.id({ required: true, description: 'The id.' }) },
    resolve: (_root, { id }, ctx, info) => load(String(id), ctx, info),
  }),
  nodes: t.field({
    type: [Node],
    nullable: { list: false, items: true },
    description: `Entities by id (at most ${MAX_LIMIT}), in the order asked; each is read as node(id:) reads it, so one unknown or forbidden id is null with an error at its index and the others answer.`,
    authScopes: { public: true },
    args: { ids: t.arg.idList({ required: true, description: `The ids, 1 to ${MAX_LIMIT}.` }) },
    resolve: async (_root, { ids }, ctx, info) => {
      if (ids.length > MAX_LIMIT) {
        throw AppError.validation([{ path: 'ids', message: `at most ${MAX_LIMIT} ids at once` }]);
      }
      // Each id answers on its own: a refusal becomes an error at its index (an Error as an item).
      const settled = await Promise.allSettled(ids.map((id) => load(String(id), ctx, info)));
      return settled.map((result) => (result.status === 'fulfilled' ? result.value : (asError(result.reason) as never)));
    },
  }),
}));
