import type { RestRoute } from './route.ts';
import { apiKeysRoutes } from './routes/api-keys.ts';
import { authRoutes } from './routes/auth.ts';
import { embedSessionsRoutes } from './routes/embed-sessions.ts';
import { identityProvidersRoutes } from './routes/identity-providers.ts';
import { invitationsRoutes } from './routes/invitations.ts';
import { meRoutes } from './routes/me.ts';
import { metaRoutes } from './routes/meta.ts';
import { rolesRoutes } from './routes/roles.ts';

/** The /v1 route table. Each entry runs a GraphQL operation; see rest-compat/route.ts. */
export const v1Routes: RestRoute[] = [
  ...metaRoutes,
  ...authRoutes,
  ...meRoutes,
  ...rolesRoutes,
  ...apiKeysRoutes,
  ...embedSessionsRoutes,
  ...identityProvidersRoutes,
  ...invitationsRoutes,
];
