import type { RestRoute } from '../route.ts';

export const venuesRoutes: RestRoute[] = [];
