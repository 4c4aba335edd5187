import type { RestRoute } from '../route.ts';

export const organisationRoutes: RestRoute[] = [];
