import type { Database } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { CHANNEL_KEY_TABLES, type AuthCache } from './auth-cache.ts';
import type { Authentication } from './principal.ts';
import type { ChannelPrincipal } from '../context.ts';
import type { SalesChannel } from '../generated/prisma/client.ts';
import { sha256 } from './keys.ts';
import { lastUseDue } from './last-use.ts';
import { Access } from './permissions.ts';

/**
 * Sales channel keys (docs/spec/service-spec.md §5): svpk_ publishable keys for browsers and apps, svsk_ secret
 * keys for servers. Either is sent as `Authorization: Bearer <key>` or `X-Channel-Key: <key>`,
 * looked up by its sha256, and determines the organisation, account and channel of the request:
 * the sales API needs no X-Service-Org (one that names another organisation is 403 ORG_MISMATCH).
 *
 * A key that is unknown, revoked, of an inactive channel or of a deleted account answers 401
 * UNAUTHENTICATED with a message saying which: to a storefront all four mean "this key no longer
 * sells", and a 404 would read as "wrong URL".
 */

export const CHANNEL_KEY_PREFIXES = { publishable: 'svpk_', secret: 'svsk_' } as const;

/** The message of a management credential (or none) on a sales API field. */
export const SALES_API_TAKES_CHANNEL_KEYS =
  'The sales API takes a sales channel key: send a publishable (svpk_) or secret (svsk_) key as Authorization: Bearer <key> or X-Channel-Key: <key>.';

/** The message of a channel key on a management field. */
export const CHANNEL_KEYS_SALES_ONLY = 'Channel keys authenticate the sales API only.';

export function isChannelKey(credential: string): boolean {
  return credential.startsWith(CHANNEL_KEY_PREFIXES.publishable) || credential.startsWith(CHANNEL_KEY_PREFIXES.secret);
}

export async function authenticateChannelKey(
  db: Database,
  cache: AuthCache,
  key: string,
  organisationSlug: string | null,
): Promise<Authentication> {
  if (!isChannelKey(key)) throw new AppError('UNAUTHENTICATED', 'A channel key starts with svpk_ or svsk_.');
  const keyHash = sha256(key);
  // Cached per organisation like API keys: revoking a key or changing its channel forgets it at once.
  const channelKey = await cache.get(
    `channel-key:${keyHash}`,
    async () => {
      const row = await db.channelKey.findUnique({
        where: { keyHash },
        include: {
          organisation: true,
          channel: { include: { account: { select: { isDeleted: true } } } },
        },
      });
      return row ? { value: row, organisationId: row.organisationId } : undefined;
    },
    CHANNEL_KEY_TABLES,
  );
  if (!channelKey) throw new AppError('UNAUTHENTICATED', 'Unknown channel key.');
  if (channelKey.revokedAt) throw new AppError('UNAUTHENTICATED', 'The channel key has been revoked.');
  if (!channelKey.channel.isActive) throw new AppError('UNAUTHENTICATED', 'The sales channel of this key is inactive.');
  if (channelKey.channel.account.isDeleted) throw new AppError('UNAUTHENTICATED', 'The account of this sales channel was deleted.');
  if (organisationSlug !== null && organisationSlug !== channelKey.organisation.slug) throw new AppError('ORG_MISMATCH');
  const now = Date.now();
  if (lastUseDue(channelKey.id, channelKey.lastUsedAt, now)) {
    channelKey.lastUsedAt = new Date(now);
    await db.channelKey.update({ where: { id: channelKey.id }, data: { lastUsedAt: channelKey.lastUsedAt } });
  }
  const principal: ChannelPrincipal = {
    kind: 'channel',
    channelKeyId: channelKey.id,
    channelId: channelKey.channel.id,
    accountId: channelKey.channel.accountId,
    keyKind: channelKey.kind,
  };
  const { account: _account, ...channel } = channelKey.channel;
  channelsOf.set(principal, channel);
  return { principal, organisation: channelKey.organisation, access: Access.none() };
}

/**
 * The sales channel as authentication read it with the key (cached with it, so forgotten the
 * moment the channel, its account or the key changes), for the principal authentication made.
 */
const channelsOf = new WeakMap<ChannelPrincipal, SalesChannel>();

/** The channel of a principal `authenticateChannelKey` made (or made a copy of), if it is at hand; read-only. */
export function authenticatedChannel(principal: ChannelPrincipal): SalesChannel | undefined {
  return channelsOf.get(principal);
}

/** A principal made from another (a customer token beside the key) keeps its channel. */
export function sameChannel(from: ChannelPrincipal, to: ChannelPrincipal): ChannelPrincipal {
  const channel = channelsOf.get(from);
  if (channel) channelsOf.set(to, channel);
  return to;
}
