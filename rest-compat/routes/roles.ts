import type { RestRoute } from '../route.ts';

export const rolesRoutes: RestRoute[] = [];
