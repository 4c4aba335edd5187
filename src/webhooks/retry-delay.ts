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

/**
 * Waits between tries of an attempt that found no free slot (its endpoint or organisation has its
 * bound of attempts in flight): growing, so a long backlog costs few workflow tasks. Jittered, so
 * the attempts a busy endpoint made wait do not all come back at once.
 */
export function slotRetryDelayMs(tries: number): number {
  return Math.min(60_000, 1_000 * 2 ** tries) * (0.75 + Math.random() / 2);
}

/**
 * Longest wait between tries of a last attempt put off by an open circuit: the partner gets its
 * final try within this of its endpoint answering again, while a long outage costs each waiting
 * delivery only a few wake-ups an hour.
 */
const CIRCUIT_RETRY_CAP_MS = 15 * 60 * 1000;

/**
 * The wait before trying again a last attempt that found its endpoint's circuit open: until the
 * circuit lets an attempt through (`openForMs`), plus a growing, jittered pause, since the endpoint
 * lets one attempt at a time through then, and one that fails opens the circuit again.
 */
export function circuitRetryDelayMs(openForMs: number, tries: number): number {
  return Math.max(0, openForMs) + Math.min(CIRCUIT_RETRY_CAP_MS, 1_000 * 2 ** tries) * (0.75 + Math.random() / 2);
}
