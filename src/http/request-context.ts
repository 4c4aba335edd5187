import type { NextFunction, Request, Response } from 'express';
import { authenticate } from '../auth/authenticate.ts';
import type { RequestContext } from '../context.ts';
import { tenantSql } from '../db/sql.ts';
import { tenantDatabase } from '../db/tenant.ts';
import { logScope } from '../log.ts';
import type { Runtime } from '../runtime.ts';
import { deprecationHeaders, resolveVersion } from '../versions.ts';
import { requestIdOf } from './middleware.ts';
import { whenClosed } from './closed.ts';

/** Scope of the database handle of a request without an organisation: matches no row. */
const NO_ORGANISATION = 'org_none';

/** Where a client at a deprecated version reads what changed since (the `Link` of its responses). */
const VERSIONS_PATH = '/v1/meta/versions';

const LIVE_SESSION_ID = /^ses_[0-9A-Za-z]{1,64}$/;

/**
 * The one place a request's context is built (every API surface, once per request): who is
 * calling, in which organisation, with which rights, at which version, and the tenant-scoped
 * database handle resolvers use. /graphql, /v1 and /live all run with the object this leaves in
 * `res.locals.ctx`.
 */
export function requestContext(runtime: Runtime, surface: 'management' | 'sales') {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const organisationSlug = req.get('x-service-org')?.trim() || null;
    const credentials = { authorization: req.get('authorization'), channelKey: req.get('x-channel-key'), organisationSlug, surface };
    const reauthenticate = () => authenticate(runtime.db, runtime.tokens, credentials, runtime.authCache);
    const rightsReadAt = runtime.authCache.now();
    const { principal, organisation, access } = await reauthenticate();
    const apiVersion = resolveVersion(req.get('service-version'), organisation?.apiVersion);
    res.setHeader('Service-Version', apiVersion);
    for (const [name, value] of Object.entries(deprecationHeaders(apiVersion, VERSIONS_PATH))) res.setHeader(name, value);
    const scope = logScope.getStore();
    if (organisation && scope) scope.organisationId = organisation.id;
    const ctx: RequestContext = {
      requestId: requestIdOf(res),
      runtime,
      logger: runtime.logger,
      apiVersion,
      organisationSlug,
      organisation,
      principal,
      access,
      db: tenantDatabase(runtime.db, organisation?.id ?? NO_ORGANISATION),
      sql: tenantSql(runtime.db, organisation?.id ?? NO_ORGANISATION),
      liveSessionId: surface === 'sales' ? liveSessionOf(req) : null,
      clientIp: req.ip ?? '',
      userAgent: req.get('user-agent')?.slice(0, 512),
      setResponseHeader: (name, value) => res.append(name, value),
      reauthenticate,
      rightsReadAt,
      live: { resumeAfter: req.get('last-event-id') ?? null, whenClosed: (then) => whenClosed(res, then), drop: () => res.destroy() },
    };
    res.locals.ctx = ctx;
    next();
  };
}

/** The context `requestContext` built for this request. */
export function contextOf(res: Response): RequestContext {
  return res.locals.ctx as RequestContext;
}

/** X-Live-Session, else the live_session cookie; anything not shaped like a session id is ignored. */
function liveSessionOf(req: Request): string | null {
  const header = req.get('x-live-session')?.trim();
  if (header) return LIVE_SESSION_ID.test(header) ? header : null;
  const cookie = /(?:^|;\s*)live_session=([^;]+)/.exec(req.get('cookie') ?? '')?.[1];
  return cookie && LIVE_SESSION_ID.test(cookie) ? cookie : null;
}
