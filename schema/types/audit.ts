import { AUDIT_ACTIONS, getAuditEntry, listAuditEntries } from '../../src/services/audit.ts';
import { builder } from '../builder.ts';
import { Node, relatedNode } from '../node.ts';
import { accountRelation } from './account.ts';
import { pageArgsFor, pagedConnection } from '../pagination.ts';
import { valuesEnum } from './common.ts';

/** audit.read on at least one account; each entry then needs it on its own account (every account for one without). */
const READ = { $all: { organisation: true, permission: 'audit.read' } } as const;

const AuditActorKind = valuesEnum('AuditActorKind', 'Who made an audited change.', {
  user: 'A signed-in user (actorId: usr_).',
  api_key: 'An organisation API key (actorId: oak_).',
  embed_session: 'An embed session (actorId: ems_).',
  system: 'The service itself (actorId: null), such as the worker.',
});

export const AuditEntry = builder.prismaObject('AuditEntry', {
  interfaces: [Node],
  description: `One change to the organisation's configuration or money (aud_), written in the change's own transaction and never changed or deleted through any API. Actions: ${AUDIT_ACTIONS.join(', ')}.`,
  authScopes: (entry, ctx) => ctx.access.allows('audit', 'read', entry.accountId),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    accountId: t.exposeID('accountId', {
      nullable: true,
      description: 'The account the change belongs to; null for the organisation as a whole (readable with audit.read on every account).',
    }),
    account: t.field(
      accountRelation(
        'The account the change belongs to, or null for the organisation as a whole (also null, with an error, where you may not read accounts).',
      ),
    ),
    actorKind: t.field({ type: AuditActorKind, description: 'Who made the change.', resolve: (entry) => entry.actorKind as never }),
    actorId: t.exposeID('actorId', { nullable: true, description: 'The user, API key or embed session; null for the service itself.' }),
    actor: t.field({
      type: Node,
      nullable: true,
      description:
        'The user or API key that made the change, read as node(id:) reads it: null for the service itself, an embed session, one deleted since, or one node(id:) does not find for you (null with an error where it refuses you).',
      resolve: (entry, _args, ctx, info) => relatedNode(entry.actorId, ctx, info),
    }),
    action: t.exposeString('action', { description: 'What was done, `<target>.<verb>` (event.updated, api_key.revoked, order.refunded).' }),
    targetType: t.exposeString('targetType', { description: 'The kind of thing changed: the part of the action before its dot.' }),
    targetId: t.exposeID('targetId', { description: 'The id of the thing changed.' }),
    target: t.field({
      type: Node,
      nullable: true,
      description:
        'The thing changed, read as node(id:) reads it (an Event, an ApiKey, a WebhookEndpoint, …): null once deleted or where node(id:) does not find it for you (null with an error where it refuses you).',
      resolve: (entry, _args, ctx, info) => relatedNode(entry.targetId, ctx, info),
    }),
    changes: t.field({
      type: 'JSONObject',
      description:
        'The changed fields: `{field: {before, after}}`; a secret (password and key hashes, webhook and client secrets, tokens) only as `{field: {changed: true}}`.',
      resolve: (entry) => entry.changes as Record<string, unknown>,
    }),
    requestId: t.exposeString('requestId', { nullable: true, description: 'The request that made the change (X-Request-Id), or null.' }),
    clientAddress: t.exposeString('clientAddress', { nullable: true, description: "The client's address, or null." }),
    userAgent: t.exposeString('userAgent', { nullable: true, description: "The client's User-Agent, or null when it sent none." }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the change was made.' }),
  }),
});

const AuditEntryConnection = pagedConnection(AuditEntry, 'AuditEntryConnection', 'audit entries');

builder.queryFields((t) => ({
  auditEntry: t.field({
    type: AuditEntry,
    nullable: true,
    description: 'One audit entry you may read (audit.read on its account; on every account for one without).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Audit entry id (aud_).' }) },
    resolve: (_root, { id }, ctx) => getAuditEntry(ctx, String(id)),
  }),
  auditEntries: t.field({
    type: AuditEntryConnection,
    nullable: true,
    description:
      'A page of the audit entries you may read, newest first (GET /v1/audit-entries): those of the accounts where you hold audit.read, and those of the organisation as a whole where you hold it on every account.',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      actorKind: t.arg({ type: AuditActorKind, description: 'Only changes made by this kind of actor.' }),
      actorId: t.arg.id({ description: 'Only changes made by this user, API key or embed session.' }),
      targetType: t.arg.string({ description: 'Only changes to this kind of thing (event, api_key, webhook_endpoint, …).' }),
      targetId: t.arg.id({ description: 'Only changes to this thing.' }),
      action: t.arg.string({ description: 'Only this action (`<target>.<verb>`, as listed on AuditEntry).' }),
      createdFrom: t.arg({ type: 'DateTime', description: 'Only changes made at or after this instant.' }),
      createdTo: t.arg({ type: 'DateTime', description: 'Only changes made at or before this instant.' }),
    },
    resolve: (_root, args, ctx) => listAuditEntries(ctx, args),
  }),
}));
