import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';

/** What the webhook services that start workflows from a request (resend, recover) share. */

/** Half-open: an open circuit lets one attempt through now (a manual attempt is the partner saying "try"). */
export async function closeCircuit(ctx: RequestContext, endpointId: string): Promise<void> {
  await ctx.db.webhookEndpoint.updateMany({
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
