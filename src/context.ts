import type { ExecutionArgs } from 'graphql';
import type { Access } from './auth/permissions.ts';
import type { Authentication, Principal } from './auth/principal.ts';
import { AppError } from './errors.ts';
import type { TenantSql } from './db/sql.ts';
import type { TenantDatabase } from './db/tenant.ts';
import type { Organisation } from './generated/prisma/client.ts';
import type { Follower } from './live/transport.ts';
import type { Logger } from './log.ts';
import type { Runtime } from './runtime.ts';

/**
 * Everything one request knows about itself. Created once per HTTP request and shared by the
 * GraphQL resolvers and the REST compatibility layer (which runs GraphQL operations in-process
 * with this very object), so both surfaces see the same credential, organisation and version.
 */
export interface RequestContext {
  requestId: string;
  runtime: Runtime;
  logger: Logger;
  /** The dated API version this request resolved to (Service-Version header > organisation > current). */
  apiVersion: string;
  /** The X-Service-Org header, trimmed; null when absent. */
  organisationSlug: string | null;
  /** The organisation the request acts in: the credential's, named by X-Service-Org. */
  organisation: Organisation | null;
  principal: Principal | null;
  /** What the principal may do in the organisation; the one evaluator every surface uses. */
  access: Access;
  /**
   * The only database handle for tenant data: scoped to `organisation` (or to nothing when there
   * is none). Cross-organisation lookups (credentials, slugs) use runtime.db in src/auth only.
   */
  db: TenantDatabase;
  /** Hand-written statements of the same organisation, for the hottest reads (src/db/sql.ts). */
  sql: TenantSql;
  /**
   * The sales session the request names (sales API): the X-Live-Session header, else the
   * `live_session` cookie of hosted pages; null when neither. Not trusted by itself: a session is
   * used only when it belongs to the key's channel and has not expired.
   */
  liveSessionId: string | null;
  /** The client's address (behind a loopback proxy, the one it forwarded), for per-client limits. */
  clientIp: string;
  /** The client's User-Agent header (up to 512 characters), for the audit log; absent when it sent none. */
  userAgent?: string;
  /**
   * Reads the request's credential again (through the auth cache): what a subscription checks its
   * rights against while it streams (src/live/streams.ts).
   */
  reauthenticate: () => Promise<Authentication>;
  /**
   * The credential clock (src/auth/auth-cache.ts `now`) just before the principal and rights were
   * read: work that starts after they changed reads them again first (src/auth/current-rights.ts).
   */
  rightsReadAt: number;
  /**
   * A subscription's request: the Last-Event-ID it resumes after, its follower (a topic stream,
   * src/live/followers.ts), the execution arguments its events are executed with (src/live/sse.ts),
   * and what runs once its answer is over, however it ended (a stream's place among the bounds).
   */
  live: {
    resumeAfter: string | null;
    follower?: Follower;
    args?: ExecutionArgs;
    whenClosed?: (then: () => void) => void;
    /** Drops the connection without an answer's end: a stream's client reconnects (with Last-Event-ID). */
    drop?: () => void;
  };
  /** Sets a response header (the sales API answers X-Live-Session and its cookie this way). */
  setResponseHeader: (name: string, value: string) => void;
}

/** The signed-in customer of a principal: a customer token, alone or beside a channel key; else null. */
export function signedInCustomer(p: Principal | null): { customerId: string; accountId: string } | null {
  if (p?.kind === 'customer') return p;
  if (p?.kind === 'channel' && p.customerId !== undefined) return { customerId: p.customerId, accountId: p.accountId };
  return null;
}

/** The signed-in customer of a context whose field declared the `customer` scope. */
export function customerOf(ctx: RequestContext): { customerId: string; accountId: string } {
  const customer = signedInCustomer(ctx.principal);
  if (!customer) throw new AppError('INTERNAL', 'customer scope was not enforced');
  return customer;
}

/** The organisation of a context whose field declared the `organisation` scope. */
export function organisationOf(ctx: RequestContext): Organisation {
  if (!ctx.organisation) throw new Error('organisation scope was not enforced');
  return ctx.organisation;
}

export type ChannelPrincipal = Extract<Principal, { kind: 'channel' }>;

/** The channel key of a context whose field declared the `salesChannel` scope. */
export function channelOf(ctx: RequestContext): ChannelPrincipal {
  if (ctx.principal?.kind !== 'channel') throw new AppError('INTERNAL', 'salesChannel scope was not enforced');
  return ctx.principal;
}
