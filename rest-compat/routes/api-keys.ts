import type { RestRoute } from '../route.ts';

export const apiKeysRoutes: RestRoute[] = [];
