import type { DeliverBatchInput, DeliverBatchResult } from './batch.ts';
import type { ManualAttemptResult, RecoverResult, RecoveryCursor } from './manual.ts';

/**
 * The webhook workflows as their starters see them: name, input and result. The API and the
 * dispatcher start them by these names (src/webhooks/starts.ts, type-checked: a wrong name or
 * input does not compile); workflows/workflows.ts implements them and is checked against this
 * interface, so the two processes cannot disagree. Defined here, below both, so src/ never imports
 * workflows/.
 */
export interface WebhookWorkflows {
  /** The batch (whb_) of first attempts: workflows/webhook-batch.ts. */
  deliverBatch: (input: DeliverBatchInput) => Promise<DeliverBatchResult>;
  /** One delivery's retries (workflow id = the delivery id): workflows/webhook-delivery.ts. */
  deliverWebhook: (input: DeliverWebhookInput) => Promise<DeliverWebhookResult>;
  /** One manual attempt of a delivery (whm_): workflows/webhook-manual.ts. */
  resendWebhookDelivery: (input: { deliveryId: string; attemptId: string }) => Promise<ManualAttemptResult>;
  /** Every failed delivery of an endpoint since a time, again (whr_): workflows/webhook-manual.ts. */
  recoverWebhookEndpoint: (input: RecoverWebhookEndpointInput) => Promise<RecoverResult>;
}

export type WebhookWorkflowName = keyof WebhookWorkflows;

export interface RecoverWebhookEndpointInput {
  organisationId: string;
  endpointId: string;
  /** ISO 8601 instants: failed deliveries created in [since, until]. */
  since: string;
  until: string;
  /**
   * The endpoint's URL when the recovery was asked for: only deliveries made for it are sent (unless
   * includeOtherUrls), and a change of the endpoint's URL ends the recovery. Absent: the endpoint's
   * URL at each step.
   */
  url?: string;
  /** Deliveries made for another URL are sent too (the caller confirmed it). */
  includeOtherUrls?: boolean;
  /** Where an earlier run of the same recovery got to (it continued as new to keep its history short). */
  progress?: RecoveryProgress;
}

/** How far a recovery has got: what it sent, and where it goes on from. */
export interface RecoveryProgress {
  attempted: number;
  succeeded: number;
  /** Failed deliveries taken so far, at most RECOVERY_MAX_DELIVERIES. */
  taken: number;
  /** No more failed deliveries were found after `after`. */
  exhausted: boolean;
  after?: RecoveryCursor;
  /** Deliveries taken that found no slot yet. */
  retry: string[];
}

export interface DeliverWebhookInput {
  deliveryId: string;
  /** Delays after attempt 1, 2, ... (WEBHOOK_RETRY_SCHEDULE at the time the delivery started). */
  scheduleMs: number[];
  /** Per-attempt timeout (WEBHOOK_ATTEMPT_TIMEOUT). */
  attemptTimeoutMs: number;
  /** The first attempt this workflow makes (default 1); the batch made the earlier ones. */
  fromAttempt?: number;
}

export interface DeliverWebhookResult {
  status: 'succeeded' | 'failed';
  /** Why delivery stopped before the schedule ran out (an endpoint disabled or deleted meanwhile). */
  stoppedBecause?: string;
  /** One entry per attempt this workflow made, with the workflow clock's time of the attempt (ISO 8601). */
  attempts: Array<{ attemptNumber: number; at: string; ok: boolean; statusCode: number | null; error: string | null }>;
}
