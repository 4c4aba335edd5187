import type { RestRoute } from './route.ts';
import { accessRoutes } from './routes/access.ts';
import { apiKeysRoutes } from './routes/api-keys.ts';
import { auditRoutes } from './routes/audit.ts';
import { authRoutes } from './routes/auth.ts';
import { accountsRoutes } from './routes/accounts.ts';
import { embedSessionsRoutes } from './routes/embed-sessions.ts';
import { eventsRoutes } from './routes/events.ts';
import { identityProvidersRoutes } from './routes/identity-providers.ts';
import { invitationsRoutes } from './routes/invitations.ts';
import { meRoutes } from './routes/me.ts';
import { metaRoutes } from './routes/meta.ts';
import { ordersRoutes } from './routes/orders.ts';
import { organisationRoutes } from './routes/organisation.ts';
import { partnerRoutes } from './routes/partner.ts';
import { rolesRoutes } from './routes/roles.ts';
import { salesChannelsRoutes } from './routes/sales-channels.ts';
import { venuesRoutes } from './routes/venues.ts';
import { webhooksRoutes } from './routes/webhooks.ts';

/** The /v1 route table. Each entry runs a GraphQL operation; see rest-compat/route.ts. */
export const v1Routes: RestRoute[] = [
  ...metaRoutes,
  ...authRoutes,
  ...meRoutes,
  ...rolesRoutes,
  ...accessRoutes,
  ...apiKeysRoutes,
  ...embedSessionsRoutes,
  ...identityProvidersRoutes,
  ...invitationsRoutes,
  ...organisationRoutes,
  ...accountsRoutes,
  ...venuesRoutes,
  ...eventsRoutes,
  ...partnerRoutes,
  ...salesChannelsRoutes,
  ...ordersRoutes,
  ...webhooksRoutes,
  ...auditRoutes,
];
