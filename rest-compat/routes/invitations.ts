import type { RestRoute } from '../route.ts';

export const invitationsRoutes: RestRoute[] = [];
