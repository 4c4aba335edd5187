import type { TenantDatabase } from '../db/tenant.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import {
  RECOVERIES_PER_ENDPOINT_PER_HOUR,
  RECOVERIES_PER_ORGANISATION_PER_HOUR,
  RESENDS_PER_ENDPOINT_PER_MINUTE,
  RESENDS_PER_ORGANISATION_PER_MINUTE,
} from '../webhooks/operator-limits.ts';

/** What the webhook services that start workflows from a request (resend, recover) share. */

/** Half-open: an open circuit lets one attempt through now (a manual attempt is the partner saying "try"). */
export async function closeCircuit(db: Pick<TenantDatabase, 'webhookEndpoint'>, endpointId: string): Promise<void> {
  await db.webhookEndpoint.updateMany({
    where: { id: endpointId, circuitOpenUntil: { gt: new Date() } },
    data: { circuitOpenUntil: null },
  });
}

/** The API's Temporal client; UNAVAILABLE (503) when Temporal is not configured or does not answer. */
export async function temporalClient(ctx: RequestContext) {
  if (!ctx.runtime.temporal) throw new AppError('UNAVAILABLE', 'Webhook delivery is not available: no Temporal is configured.');
  try {
    return await ctx.runtime.temporal.client();
  } catch (error) {
    ctx.runtime.logger.warn({ err: error }, 'Temporal unreachable');
    throw new AppError('UNAVAILABLE', 'Webhook delivery is temporarily unavailable; try again shortly.');
  }
}

/** What one operator action may cost per endpoint and per organisation (src/webhooks/operator-limits.ts). */
const OPERATOR_ACTIONS = {
  resend: {
    things: 'resends',
    perEndpoint: RESENDS_PER_ENDPOINT_PER_MINUTE,
    perOrganisation: RESENDS_PER_ORGANISATION_PER_MINUTE,
    windowMs: 60_000,
    window: 'a minute',
    otherwise: '; to send many failed deliveries again, recover the endpoint',
  },
  recover: {
    things: 'recoveries',
    perEndpoint: RECOVERIES_PER_ENDPOINT_PER_HOUR,
    perOrganisation: RECOVERIES_PER_ORGANISATION_PER_HOUR,
    windowMs: 3_600_000,
    window: 'an hour',
    otherwise: '',
  },
} as const;

/**
 * Counts an operator action against its endpoint's and its organisation's allowance, in PostgreSQL
 * so every API process counts alike: 429 RATE_LIMITED with Retry-After beyond either.
 */
export async function countOperatorAction(
  ctx: RequestContext,
  action: keyof typeof OPERATOR_ACTIONS,
  endpoint: { id: string; organisationId: string },
): Promise<void> {
  const { things, perEndpoint, perOrganisation, windowMs, window, otherwise } = OPERATOR_ACTIONS[action];
  const { rateLimiter } = ctx.runtime;
  await rateLimiter.take(
    `webhook-${action}:endpoint`,
    endpoint.id,
    perEndpoint,
    windowMs,
    `At most ${perEndpoint} ${things} ${window} per endpoint${otherwise}.`,
  );
  await rateLimiter.take(
    `webhook-${action}:organisation`,
    endpoint.organisationId,
    perOrganisation,
    windowMs,
    `At most ${perOrganisation} ${things} ${window} per organisation.`,
  );
}
