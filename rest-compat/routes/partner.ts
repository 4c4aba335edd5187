import type { RestRoute } from '../route.ts';

export const partnerRoutes: RestRoute[] = [];
