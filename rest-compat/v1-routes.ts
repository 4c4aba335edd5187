import type { RestRoute } from './route.ts';
import { authRoutes } from './routes/auth.ts';
import { meRoutes } from './routes/me.ts';
import { metaRoutes } from './routes/meta.ts';

/** The /v1 route table. Each entry runs a GraphQL operation; see rest-compat/route.ts. */
export const v1Routes: RestRoute[] = [...metaRoutes, ...authRoutes, ...meRoutes];
