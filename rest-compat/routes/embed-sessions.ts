import type { RestRoute } from '../route.ts';

export const embedSessionsRoutes: RestRoute[] = [];
