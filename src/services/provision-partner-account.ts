import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { validate } from '../validation.ts';
import { issueChannelKey } from './sales-channels.ts';
import { missingRight } from '../auth/refusal.ts';
import { statusOf } from '../statuses.ts';
import { changesBetween, recordAudit } from './audit.ts';

const slug = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'lower-case letters, digits and inner hyphens, 1 to 63 characters');

export const provisionPartnerAccountInput = z.strictObject({
  name: z.string().trim().min(1).max(255),
  salesChannel: z
    .strictObject({
      name: z.string().trim().min(1).max(255).optional(),
      slug: slug.optional(),
      channelType: statusOf('channelType').optional(),
    })
    .optional(),
});

function slugify(text: string): string {
  const base = text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50);
  return base || 'channel';
}

/**
 * Partner account provisioning: the account, a sales channel and its publishable key (svpk_,
 * shown once), created atomically. Needs accounts.write and sales_channels.write on every
 * account (a partner integration acts for the organisation).
 */
export async function provisionPartnerAccount(ctx: RequestContext, raw: Record<string, unknown>) {
  const { name, salesChannel } = validate(provisionPartnerAccountInput, raw);
  if (!ctx.access.allows('accounts', 'write') || !ctx.access.allows('sales_channels', 'write')) {
    throw missingRight(ctx);
  }
  const organisationId = ctx.organisation!.id;
  const channelSlug = salesChannel?.slug ?? `${slugify(name)}-${newId('salesChannel').slice(-6).toLowerCase()}`;
  try {
    return await ctx.db.$transaction(async (tx) => {
      const account = await tx.account.create({ data: { id: newId('account'), organisationId, name } });
      const channel = await tx.salesChannel.create({
        data: {
          id: newId('salesChannel'),
          organisationId,
          accountId: account.id,
          name: salesChannel?.name ?? name,
          slug: channelSlug,
          channelType: salesChannel?.channelType ?? 'partner',
        },
      });
      const { channelKey, key } = await issueChannelKey(tx, channel, 'publishable');
      await recordAudit(tx, ctx, {
        action: 'account.created',
        targetId: account.id,
        accountId: account.id,
        changes: changesBetween(null, account),
      });
      await recordAudit(tx, ctx, {
        action: 'sales_channel.created',
        targetId: channel.id,
        accountId: account.id,
        changes: changesBetween(null, channel),
      });
      await recordAudit(tx, ctx, {
        action: 'channel_key.created',
        targetId: channelKey.id,
        accountId: account.id,
        changes: changesBetween(null, channelKey),
      });
      return {
        account,
        salesChannel: { id: channel.id, slug: channel.slug, channelType: channel.channelType },
        publishableKey: { id: channelKey.id, key },
      };
    });
  } catch (error) {
    if (isUniqueViolation(error)) {
      // A duplicate is a conflict with what exists, as creating the channel alone answers it.
      throw new AppError('CONFLICT', `A sales channel with slug "${channelSlug}" already exists.`, [
        { path: 'salesChannel.slug', message: `A sales channel with slug "${channelSlug}" already exists.` },
      ]);
    }
    throw error;
  }
}
