import type { RestRoute } from '../route.ts';

export const eventsRoutes: RestRoute[] = [];
