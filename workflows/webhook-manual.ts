/**
 * Manual attempts (src/webhooks/manual.ts): a resend (whm_) makes one; a recovery (whr_ + the
 * endpoint's id, one at a time per endpoint) makes one for every failed delivery of the endpoint
 * since a time. Sandbox code.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ManualAttemptResult, RecoverResult } from '../src/webhooks/manual.ts';
import type { RecoverWebhookEndpointInput } from '../src/webhooks/workflow-contract.ts';
import type { Activities } from './activities.ts';

const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' } as const;

export async function resendWebhookDelivery(input: { deliveryId: string; attemptId: string }): Promise<ManualAttemptResult> {
  const { resendDelivery } = proxyActivities<Activities>({ startToCloseTimeout: '1h', heartbeatTimeout: '30s', retry });
  return resendDelivery(input);
}

export async function recoverWebhookEndpoint(input: RecoverWebhookEndpointInput): Promise<RecoverResult> {
  const { recoverFailedDeliveries } = proxyActivities<Activities>({ startToCloseTimeout: '24h', heartbeatTimeout: '60s', retry });
  return recoverFailedDeliveries({ ...input, recoveryRunId: workflowInfo().runId });
}
