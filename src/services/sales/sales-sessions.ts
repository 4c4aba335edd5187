import { publicUrl } from '../../config.ts';
import type { RequestContext } from '../../context.ts';
import type { Statement } from '../../db/sql.ts';
import type { SalesChannel } from '../../generated/prisma/client.ts';
import { newId } from '../../ids.ts';

/**
 * A storefront's sales session (ses_): it starts with the first cart of a browser; its id is
 * answered in X-Live-Session and a `live_session` cookie (for hosted pages) and sent back the same
 * way. A publishable key reaches a cart only with its session (cart-rows.ts), and using the session
 * keeps it alive for SESSION_TTL_MS.
 */

export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The session named by the request when it is this channel's and still valid (renewed), else a
 * new one, as a statement's common table expression `session(id)`: the cart made with it commits
 * in the same statement.
 */
export function sessionFor(ctx: RequestContext, sql: Statement, channel: SalesChannel, now: Date): string {
  const expiresAt = sql.param(new Date(now.getTime() + SESSION_TTL_MS));
  const at = sql.param(now);
  const channelId = sql.param(channel.id);
  return `renewed AS (
      UPDATE sales_sessions SET "lastSeenAt" = ${at}, "expiresAt" = ${expiresAt}
       WHERE "organisationId" = $1 AND id = ${sql.param(ctx.liveSessionId ?? null)} AND "channelId" = ${channelId} AND "expiresAt" > ${at}
      RETURNING id
    ), created AS (
      INSERT INTO sales_sessions ("organisationId", id, "accountId", "channelId", "expiresAt", "lastSeenAt")
      SELECT $1, ${sql.param(newId('salesSession'))}, ${sql.param(channel.accountId)}, ${channelId}, ${expiresAt}, ${at}
       WHERE NOT EXISTS (SELECT 1 FROM renewed)
      RETURNING id
    ), session AS (SELECT id FROM renewed UNION ALL SELECT id FROM created)`;
}

/** Answers the session in X-Live-Session and in the cookie hosted pages read. */
export function announceSession(ctx: RequestContext, sessionId: string): void {
  ctx.setResponseHeader('X-Live-Session', sessionId);
  const secure = publicUrl(ctx.runtime.config).startsWith('https:') ? '; Secure' : '';
  ctx.setResponseHeader(
    'Set-Cookie',
    `live_session=${sessionId}; Path=/; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`,
  );
}
