import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';

/**
 * Fairness between tenants, and protection of receivers: an attempt is only sent while it holds a
 * slot, and slots are bounded per endpoint (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT) and per
 * organisation (WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION) across every worker process. A slot is a
 * row of webhook_leases, granted by the webhook_acquire_leases function (migration
 * 20261123100000_webhook_batches) and deleted by the statement that records the attempt. So a slow
 * or dead receiver holds at most its endpoint's slots, its owner at most the organisation's, and
 * everyone else's attempts go on.
 *
 * The bound is exact while workers live. A worker that dies leaves its slots held until they
 * expire (the attempt timeout plus LEASE_MARGIN_MS), which can only lower throughput for that
 * endpoint meanwhile, never exceed the bound; a retried attempt takes over its own lease.
 *
 * The same function reads the endpoint's circuit breaker (state in webhook_endpoints, written by
 * the recording statement, deliver.ts): 'open' while the endpoint cools down after
 * WEBHOOK_BREAKER_THRESHOLD consecutive failures, then one attempt at a time until one succeeds.
 */

export type SlotOutcome = 'granted' | 'busy' | 'open';

export type SlotLimits = Pick<
  Config,
  'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT' | 'WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION' | 'WEBHOOK_BREAKER_THRESHOLD' | 'WEBHOOK_ATTEMPT_TIMEOUT'
>;

/** Beyond the attempt timeout: the record after the answer, and clock skew between workers and PostgreSQL. */
const LEASE_MARGIN_MS = 30_000;

/** The slot of one attempt: a scheduled one by its place in the schedule, a manual one by its id. */
export function leaseId(deliveryId: string, attempt: number | string): string {
  return `${deliveryId}:${attempt}`;
}

/**
 * Asks for slots for these attempts, in priority order, in one round trip. An attempt the answer
 * lacks (its delivery vanished) counts as busy.
 */
export async function acquireSlots(
  db: Database,
  limits: SlotLimits,
  requests: ReadonlyArray<{ leaseId: string; deliveryId: string }>,
): Promise<Map<string, SlotOutcome>> {
  const outcomes = new Map<string, SlotOutcome>();
  if (requests.length === 0) return outcomes;
  const rows = await db.$queryRaw<Array<{ out_lease_id: string; out_outcome: SlotOutcome }>>`
    SELECT out_lease_id, out_outcome FROM webhook_acquire_leases(
      ${requests.map((r) => r.leaseId)}::text[], ${requests.map((r) => r.deliveryId)}::text[],
      ${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT}::int, ${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION}::int,
      ${limits.WEBHOOK_BREAKER_THRESHOLD}::int, ${limits.WEBHOOK_ATTEMPT_TIMEOUT + LEASE_MARGIN_MS}::int)`;
  for (const request of requests) outcomes.set(request.leaseId, 'busy');
  for (const row of rows) outcomes.set(row.out_lease_id, row.out_outcome);
  return outcomes;
}

/** Gives a slot back without recording an attempt (the attempt was not made after all). */
export async function releaseSlots(db: Database, leaseIds: readonly string[]): Promise<void> {
  if (leaseIds.length === 0) return;
  await db.$executeRaw`DELETE FROM webhook_leases WHERE id = ANY(${[...leaseIds]}::text[])`;
  slotReleased();
}

/** Slots whose holder died: they count no more (see above), and are removed by the sweep. */
export async function deleteExpiredSlots(db: Database): Promise<number> {
  return db.$executeRaw`DELETE FROM webhook_leases WHERE "expiresAt" < now()`;
}

/*
 * Waiting for a slot. Slots freed in this process wake its waiters at once; those freed by another
 * process are noticed by polling. Waiters ask again no more often than MIN_RETRY_MS, so a burst of
 * releases does not turn into a burst of queries.
 */
const MIN_RETRY_MS = 20;
const POLL_MS = 100;
const waiters = new Set<() => void>();

/** Called whenever this process frees a slot. */
export function slotReleased(): void {
  for (const wake of waiters) wake();
  waiters.clear();
}

/** Resolves when a slot may have become free: after a local release (but not before MIN_RETRY_MS), or after POLL_MS. */
export function slotMayBeFree(): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const wake = () => {
      clearTimeout(timer);
      const early = MIN_RETRY_MS - (Date.now() - started);
      if (early > 0) setTimeout(resolve, early);
      else resolve();
    };
    timer = setTimeout(() => {
      waiters.delete(wake);
      resolve();
    }, POLL_MS);
    waiters.add(wake);
  });
}
