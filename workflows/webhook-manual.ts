/**
 * Manual attempts (src/webhooks/manual.ts): a resend (whm_) makes one; a recovery (whr_ + the
 * endpoint's id, one at a time per endpoint) makes one for each failed delivery of the endpoint
 * since a time, at most RECOVERY_MAX_DELIVERIES, RECOVERY_STEP_SIZE at a time a pause apart. An
 * attempt that finds no slot is tried again after a sleep here, in a durable timer, so that it does
 * not hold one of the worker's activity slots while its endpoint is busy. Sandbox code.
 */
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ManualAttemptResult, RecoverResult, RecoverStepResult } from '../src/webhooks/manual.ts';
import { RECOVERY_MAX_DELIVERIES, RECOVERY_STEP_INTERVAL_MS, RECOVERY_STEP_SIZE } from '../src/webhooks/operator-limits.ts';
import { slotRetryDelayMs } from '../src/webhooks/retry-delay.ts';
import type { RecoverWebhookEndpointInput, RecoveryProgress } from '../src/webhooks/workflow-contract.ts';
import type { Activities } from './activities.ts';

const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' } as const;
/**
 * An activity waits seconds for slots and makes at most a step's attempts at once, each bounded by
 * WEBHOOK_ATTEMPT_TIMEOUT (15 s by default); it heartbeats meanwhile, so a worker that dies is
 * noticed within the heartbeat timeout, long before this.
 */
const manualActivities = { startToCloseTimeout: '10m', heartbeatTimeout: '30s', retry } as const;

export async function resendWebhookDelivery(input: { deliveryId: string; attemptId: string }): Promise<ManualAttemptResult> {
  const { resendDelivery } = proxyActivities<Activities>(manualActivities);
  for (let tries = 0; ; tries += 1) {
    const result = await resendDelivery(input);
    if (!result.deferred) return result;
    // Waiting days for a busy endpoint would outgrow the history: a fresh run goes on (same attempt id).
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof resendWebhookDelivery>(input);
    await sleep(slotRetryDelayMs(tries));
  }
}

export async function recoverWebhookEndpoint(input: RecoverWebhookEndpointInput): Promise<RecoverResult> {
  const { recoverFailedDeliveries } = proxyActivities<Activities>(manualActivities);
  // Names the recovery's attempts: the same in every run of its chain (see continueAsNew below).
  const recoveryRunId = workflowInfo().firstExecutionRunId;
  const { progress: earlier, ...recovery } = input;
  const progress: RecoveryProgress = { attempted: 0, succeeded: 0, taken: 0, exhausted: false, retry: [], ...earlier };
  for (let idle = 0; ;) {
    const take = progress.exhausted ? 0 : Math.min(RECOVERY_STEP_SIZE - progress.retry.length, RECOVERY_MAX_DELIVERIES - progress.taken);
    const step: RecoverStepResult = await recoverFailedDeliveries({
      ...recovery,
      recoveryRunId,
      retry: progress.retry,
      take,
      ...(progress.after ? { after: progress.after } : {}),
    });
    progress.attempted += step.attempted;
    progress.succeeded += step.succeeded;
    const result: RecoverResult = { attempted: progress.attempted, succeeded: progress.succeeded };
    if (step.stop) return { ...result, stoppedBecause: step.stop };
    progress.taken += step.taken;
    if (step.after) progress.after = step.after;
    progress.exhausted ||= step.exhausted;
    progress.retry = step.deferred;
    if ((progress.exhausted || progress.taken >= RECOVERY_MAX_DELIVERIES) && progress.retry.length === 0) return result;
    // A step whose deliveries all found their endpoint busy backs off like a waiting resend.
    idle = step.attempted === 0 && progress.retry.length > 0 ? idle + 1 : 0;
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof recoverWebhookEndpoint>({ ...recovery, progress });
    await sleep(idle === 0 ? RECOVERY_STEP_INTERVAL_MS : Math.max(RECOVERY_STEP_INTERVAL_MS, slotRetryDelayMs(idle - 1)));
  }
}
