/**
 * Pure (the delivery workflow runs it in Temporal's sandbox, the batch activity in the worker).
 * Longest a receiver's Retry-After may stretch a delay: double the schedule's step, or an hour if
 * that is more.
 */
const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

/**
 * The delay before the next attempt: the schedule's step, or the receiver's Retry-After when that
 * is longer, capped at the larger of twice the step and one hour (a receiver cannot push a delivery
 * out indefinitely, nor pull it earlier than the schedule).
 */
export function retryDelayMs(stepMs: number, retryAfterMs?: number): number {
  if (retryAfterMs === undefined || retryAfterMs <= stepMs) return stepMs;
  return Math.min(retryAfterMs, Math.max(2 * stepMs, RETRY_AFTER_CAP_MS));
}
