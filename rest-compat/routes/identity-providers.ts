import type { RestRoute } from '../route.ts';

export const identityProvidersRoutes: RestRoute[] = [];
