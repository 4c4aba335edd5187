import type { RestRoute } from '../route.ts';

export const accountsRoutes: RestRoute[] = [];
