import { z } from 'zod';
import { LIMITS, documentedAs, limitedArray } from '../limits/limits.ts';
import { CHANNEL_KEY_PREFIXES } from '../auth/channel-keys.ts';
import { forgetCachedAccess } from '../auth/forget.ts';
import { mintKey } from '../auth/keys.ts';
import type { RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError, type ValidationIssue } from '../errors.ts';
import type { Prisma, SalesChannel } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { changedSince, OLDEST_FIRST, type PolledListArgs, paginate } from '../pagination.ts';
import { owningAccount } from './accounts.ts';
import { type Raw } from '../validation.ts';
import { authorised, readableAccounts } from './access.ts';
import { reference, validate } from '../validation.ts';
import { statusOf } from '../statuses.ts';
import { audited, auditedChange, changesBetween, lockForChange, recordAudit } from './audit.ts';

/**
 * Sales channels (sch_) of an account and their keys (schk_). A channel sells every published or
 * on-sale event of its account (sellsAllEvents) or only the events listed for it. Rights:
 * `sales_channels.read` / `sales_channels.write` on the channel's account.
 */

const RESOURCE = 'sales_channels';

const slug = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'lower-case letters, digits and inner hyphens, 1 to 63 characters');
const name = z.string().trim().min(1).max(255);
const channelType = statusOf('channelType');
const eventIds = limitedArray(
  reference,
  'idsPerRequest',
  `at most ${LIMITS.idsPerRequest} events (a channel selling more sells all events of its account)`,
);
const storefrontUrl = documentedAs(
  z
    .string()
    .max(2000)
    .refine((value) => {
      try {
        return ['http:', 'https:'].includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, 'an http(s) URL'),
  () => ({ type: 'string', format: 'uri', maxLength: 2000, description: 'An http(s) URL.' }),
);

export const createSalesChannelInput = z.strictObject({
  accountId: reference,
  name,
  slug,
  channelType: channelType.nullish(),
  sellsAllEvents: z.boolean().nullish(),
  eventIds: eventIds.nullish(),
  storefrontUrl: storefrontUrl.nullish(),
});
export const updateSalesChannelInput = z.strictObject({
  name: name.nullish(),
  isActive: z.boolean().nullish(),
  sellsAllEvents: z.boolean().nullish(),
  eventIds: eventIds.nullish(),
  /** null clears it. */
  storefrontUrl: storefrontUrl.nullish(),
});
export const listSalesChannelsFilters = z.object({ accountId: reference.nullish() });
export const createChannelKeyInput = z.strictObject({ kind: statusOf('channelKeyKind') });

export type CreateSalesChannelInput = z.input<typeof createSalesChannelInput>;
export type UpdateSalesChannelInput = z.input<typeof updateSalesChannelInput>;

/** Channels on the accounts the caller may read (deleted accounts' channels never appear), oldest first. */
export async function listSalesChannels(ctx: RequestContext, args: PolledListArgs & Raw<z.input<typeof listSalesChannelsFilters>>) {
  const { page, limit, first, after, last, before, updatedSince, ...rawFilters } = args;
  const filters = validate(listSalesChannelsFilters, rawFilters);
  const accountId = readableAccounts(ctx, RESOURCE, filters.accountId);
  const where: Prisma.SalesChannelWhereInput = {
    account: { isDeleted: false },
    ...(accountId === undefined ? {} : { accountId }),
    ...changedSince(updatedSince),
  };
  return paginate(
    { page, limit, first, after, last, before },
    OLDEST_FIRST,
    (keyset) => ctx.db.salesChannel.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.salesChannel.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

async function loadChannel(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<SalesChannel> {
  return authorised(
    ctx,
    await ctx.db.salesChannel.findFirst({ where: { id, account: { isDeleted: false } } }),
    RESOURCE,
    action,
    'Sales channel',
  );
}

export function getSalesChannel(ctx: RequestContext, id: string): Promise<SalesChannel> {
  return loadChannel(ctx, id, 'read');
}

/** Every id must be a non-deleted event of `accountId`; failures name `eventIds.<index>`. */
async function checkEventIds(ctx: RequestContext, accountId: string, ids: readonly string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await ctx.db.event.findMany({ where: { id: { in: unique }, accountId, isDeleted: false }, select: { id: true } });
  const known = new Set(found.map((event) => event.id));
  const issues: ValidationIssue[] = [];
  ids.forEach((id, index) => {
    if (!known.has(id)) issues.push({ path: `eventIds.${index}`, message: "No such event on the channel's account (or it was deleted)." });
  });
  if (issues.length > 0) throw AppError.unknownReferences(issues);
  return unique;
}

function slugTaken(slugValue: string): AppError {
  return new AppError('CONFLICT', `A sales channel with slug "${slugValue}" already exists in this organisation.`, [
    { path: 'slug', message: 'already used by another sales channel of this organisation' },
  ]);
}

export async function createSalesChannel(ctx: RequestContext, raw: Raw<CreateSalesChannelInput>): Promise<SalesChannel> {
  const input = validate(createSalesChannelInput, raw);
  const accountId = await owningAccount(ctx, RESOURCE, input.accountId);
  const events = input.eventIds ? await checkEventIds(ctx, accountId, input.eventIds) : [];
  const id = newId('salesChannel');
  try {
    return await ctx.db.$transaction(async (tx) => {
      const channel = await tx.salesChannel.create({
        data: {
          id,
          organisationId: ctx.organisation!.id,
          accountId,
          name: input.name,
          slug: input.slug,
          channelType: input.channelType ?? 'web',
          sellsAllEvents: input.sellsAllEvents ?? true,
          storefrontUrl: input.storefrontUrl ?? null,
        },
      });
      if (events.length > 0) {
        await tx.salesChannelEvent.createMany({
          data: events.map((eventId) => ({ organisationId: ctx.organisation!.id, channelId: id, eventId })),
        });
      }
      await recordAudit(tx, ctx, {
        action: 'sales_channel.created',
        targetId: id,
        accountId,
        changes: { ...changesBetween(null, channel), ...changesBetween(null, { eventIds: events.length ? events : null }) },
      });
      return channel;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw slugTaken(input.slug);
    throw error;
  }
}

/** Name, isActive and sellsAllEvents change in place; eventIds, when given, replaces the list atomically. */
export async function updateSalesChannel(ctx: RequestContext, id: string, raw: Raw<UpdateSalesChannelInput>): Promise<SalesChannel> {
  const channel = await loadChannel(ctx, id, 'write');
  const input = validate(updateSalesChannelInput, raw);
  const events = input.eventIds ? await checkEventIds(ctx, channel.accountId, input.eventIds) : undefined;
  const data: Prisma.SalesChannelUpdateInput = {
    ...(input.name != null ? { name: input.name } : {}),
    ...(input.isActive != null ? { isActive: input.isActive } : {}),
    ...(input.sellsAllEvents != null ? { sellsAllEvents: input.sellsAllEvents } : {}),
    ...(input.storefrontUrl !== undefined ? { storefrontUrl: input.storefrontUrl } : {}),
  };
  const updated = await ctx.db.$transaction(async (tx) => {
    // Locked and read again: the entry's before is what this change replaced.
    await lockForChange(tx, channel.organisationId, 'sales_channels', id);
    const before = await tx.salesChannel.findUniqueOrThrow({ where: { id } });
    const eventsBefore = events && (await tx.salesChannelEvent.findMany({ where: { channelId: id }, select: { eventId: true } }));
    if (events) {
      await tx.salesChannelEvent.deleteMany({ where: { channelId: id } });
      if (events.length > 0) {
        await tx.salesChannelEvent.createMany({
          data: events.map((eventId) => ({ organisationId: ctx.organisation!.id, channelId: id, eventId })),
        });
      }
    }
    // Always written, so updatedAt moves when only the event list changed.
    const after = await tx.salesChannel.update({ where: { id }, data: { ...data, updatedAt: new Date() } });
    const eventIds = eventsBefore && { eventIds: eventsBefore.map((row) => row.eventId).sort() };
    await recordAudit(tx, ctx, {
      action: 'sales_channel.updated',
      targetId: id,
      accountId: channel.accountId,
      changes: { ...changesBetween(before, after), ...(events ? changesBetween(eventIds ?? null, { eventIds: [...events].sort() }) : {}) },
    });
    return after;
  });
  // Keys authenticate through a cache that holds the channel's isActive.
  forgetCachedAccess(ctx);
  return updated;
}

/** A new key of a channel; the material (svpk_ / svsk_) is answered here once and stored as its sha256. */
export async function createChannelKey(ctx: RequestContext, channelId: string, raw: Raw<z.input<typeof createChannelKeyInput>>) {
  const channel = await loadChannel(ctx, channelId, 'write');
  const { kind } = validate(createChannelKeyInput, raw);
  return audited(
    ctx,
    (tx) => issueChannelKey(tx, channel, kind),
    ({ channelKey }) => ({
      action: 'channel_key.created',
      targetId: channelKey.id,
      accountId: channel.accountId,
      changes: changesBetween(null, channelKey),
    }),
  );
}

/** Issues a key of `kind` for `channel` with `db` (the caller's transaction when it has one). */
export async function issueChannelKey(
  db: Pick<RequestContext['db'], 'channelKey'>,
  channel: { id: string; organisationId: string },
  kind: keyof typeof CHANNEL_KEY_PREFIXES,
) {
  const { key, keyHash, keyPrefix } = mintKey(CHANNEL_KEY_PREFIXES[kind]);
  const channelKey = await db.channelKey.create({
    data: { id: newId('channelKey'), organisationId: channel.organisationId, channelId: channel.id, kind, keyHash, keyPrefix },
  });
  return { channelKey, key };
}

/** Revokes a key at once (idempotent: revoking a revoked key answers it unchanged). */
export async function revokeChannelKey(ctx: RequestContext, channelId: string, keyId: string) {
  const channel = await loadChannel(ctx, channelId, 'write');
  const channelKey = await ctx.db.channelKey.findFirst({ where: { id: keyId, channelId: channel.id } });
  if (!channelKey) throw AppError.notFound('Channel key not found.');
  if (channelKey.revokedAt) return channelKey;
  // Of two revocations at once, the second finds the key revoked and records nothing.
  const revoked = await auditedChange(
    ctx,
    { table: 'channel_keys', id: keyId, read: (tx) => tx.channelKey.findUnique({ where: { id: keyId } }) },
    async (tx, before) => (before.revokedAt ? before : tx.channelKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } })),
    (after, before) =>
      before.revokedAt
        ? null
        : { action: 'channel_key.revoked', targetId: after.id, accountId: channel.accountId, changes: changesBetween(before, after) },
  );
  forgetCachedAccess(ctx);
  return revoked;
}
