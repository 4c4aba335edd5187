/**
 * The retry workflow of one webhook delivery (workflow id = the delivery id, whd_): started by the
 * batch that made attempt 1 when that attempt failed (fromAttempt 2, after the schedule's first
 * delay), so the rest of the schedule lives in durable timers and survives any worker's death.
 * Workflows started before batches existed run it from attempt 1. Sandbox code: activities are
 * imported as types only.
 */
import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import { circuitRetryDelayMs, retryDelayMs, slotRetryDelayMs } from '../src/webhooks/retry-delay.ts';
import type { DeliverWebhookInput, DeliverWebhookResult } from '../src/webhooks/workflow-contract.ts';
import type { Activities } from './activities.ts';

export { retryDelayMs };

export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverWebhookResult> {
  // Local activities: run by the worker that runs the workflow task, recorded as markers, so an
  // attempt costs one workflow task. If the worker dies mid-attempt, the workflow task times out
  // and another worker runs the attempt again: the attempt's record makes that safe.
  const { attemptDelivery, scheduleNextAttempt, markDeliveryFailed } = proxyLocalActivities<Activities>({
    // The HTTP attempt's own timeout plus room for the slot wait and the database work around it.
    startToCloseTimeout: input.attemptTimeoutMs + 15_000,
    // Only infrastructure failures (the database) are thrown; they are retried until they pass
    // (in the worker up to a minute, then through durable timers). An HTTP failure is a returned
    // result and follows the delivery schedule instead.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
    localRetryThreshold: '1m',
  });

  const total = 1 + input.scheduleMs.length;
  const attempts: DeliverWebhookResult['attempts'] = [];
  for (let n = input.fromAttempt ?? 1; n <= total; n += 1) {
    let result = await attemptDelivery(input.deliveryId, n, { timeoutMs: input.attemptTimeoutMs, lastAttempt: n === total });
    for (let tries = 0; result.deferred; tries += 1) {
      if (result.circuitOpenForMs === undefined) await sleep(slotRetryDelayMs(tries));
      else {
        // The last attempt is not spent on an open circuit: it waits until the circuit lets attempts
        // through (shown as the delivery's next attempt), then is really sent.
        const delay = circuitRetryDelayMs(result.circuitOpenForMs, tries);
        await scheduleNextAttempt(input.deliveryId, new Date(Date.now() + delay).toISOString());
        await sleep(delay);
      }
      result = await attemptDelivery(input.deliveryId, n, { timeoutMs: input.attemptTimeoutMs, lastAttempt: n === total });
    }
    attempts.push({ attemptNumber: n, at: new Date().toISOString(), ok: result.ok, statusCode: result.statusCode, error: result.error });
    if (result.ok) return { status: 'succeeded', attempts };
    if (result.stop) {
      return result.stop === 'delivery failed'
        ? { status: 'failed', attempts }
        : { status: 'failed', stoppedBecause: result.stop, attempts };
    }
    if (n === total) break;
    const delay = retryDelayMs(input.scheduleMs[n - 1]!, result.retryAfterMs);
    await scheduleNextAttempt(input.deliveryId, new Date(Date.now() + delay).toISOString());
    await sleep(delay);
  }
  // The last attempt's failure settles the delivery in the statement that records it; this covers a
  // last attempt found recorded while the delivery is still pending, and is a no-op otherwise.
  await markDeliveryFailed(input.deliveryId);
  return { status: 'failed', attempts };
}
