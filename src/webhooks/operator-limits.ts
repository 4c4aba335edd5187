/**
 * Bounds on the attempts people can ask for beyond the retry schedule: resends
 * (POST /webhook-deliveries/{id}/resend) and recoveries (POST /webhook-endpoints/{id}/recover).
 * Each such attempt is a request to a URL the tenant chose, sent by the workers every tenant
 * shares. Pure: the API checks them, and the recovery workflow (Temporal's sandbox) paces by them.
 * Counted in PostgreSQL (src/limits/rate-limiter.ts), so every API process refuses alike.
 */

/**
 * Resends of one endpoint's deliveries a minute: as many as test deliveries, which cost the same
 * (one request each). More than a person clicks through; a backlog is what recovery is for.
 */
export const RESENDS_PER_ENDPOINT_PER_MINUTE = 10;

/**
 * Resends a minute across all the endpoints of an organisation: a tenant cannot multiply the
 * per-endpoint allowance by registering more endpoints and fill the shared workers with its resends.
 */
export const RESENDS_PER_ORGANISATION_PER_MINUTE = 60;

/**
 * Deliveries one recovery sends again at most, oldest first: what one request can make the service
 * send to a receiver. A longer backlog takes several recoveries; the answer says how many remain.
 */
export const RECOVERY_MAX_DELIVERIES = 100;

/**
 * Recoveries of one endpoint an hour. One runs at a time already; this bounds how many deliveries
 * one endpoint's recoveries can send in an hour (this times RECOVERY_MAX_DELIVERIES).
 */
export const RECOVERIES_PER_ENDPOINT_PER_HOUR = 6;

/** Recoveries an hour across all the endpoints of an organisation, for the same reason as resends'. */
export const RECOVERIES_PER_ORGANISATION_PER_HOUR = 30;

/**
 * A recovery sends this many deliveries at a time, then pauses RECOVERY_STEP_INTERVAL_MS: a
 * receiver that has just come back gets a steady trickle, not its whole backlog in one burst.
 */
export const RECOVERY_STEP_SIZE = 10;
export const RECOVERY_STEP_INTERVAL_MS = 1_000;
