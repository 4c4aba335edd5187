import { createHash } from 'node:crypto';
import type { Database } from '../db/client.ts';
import { ID_PREFIXES } from '../ids.ts';
import {
  CIRCUIT_OPEN,
  loadDeliveries,
  makeAttempt,
  recordAttempt,
  SecretCache,
  stopped,
  stopReason,
  type AttemptSpec,
  type DeliverDependencies,
  type LoadedDelivery,
} from './deliver.ts';
import { RECOVERY_STEP_SIZE } from './operator-limits.ts';
import { leaseId, waitForSlots, type SlotOutcome } from './slots.ts';

/**
 * Manual attempts (trigger `manual`): a resend of one delivery, and the recovery of the failed
 * deliveries of an endpoint since a time. They are attempts like the scheduled ones (same headers,
 * the same Service-Event-Id and Service-Delivery-Id, a fresh signature, slots and breaker), with
 * two differences: they take the next position among the delivery's attempts without being part
 * of its schedule; and one that succeeds settles the delivery as succeeded (a failed one leaves it
 * as it was, and is not retried). Each is recorded under an id fixed before it is sent, so a
 * retried activity replays it.
 *
 * An activity here waits for a slot only briefly (MANUAL_SLOT_WAIT_MS). One that gets none answers
 * `deferred` and its workflow sleeps before asking again (workflows/webhook-manual.ts): a manual
 * attempt waiting for a busy endpoint holds a durable timer, not one of the worker's activity
 * slots, which every tenant's resends and recoveries share.
 */

/**
 * How long a manual attempt waits in the worker for a slot before giving its activity slot back:
 * as long as a scheduled retry waits (deliver.ts), enough for a burst's slots to turn over.
 */
export const MANUAL_SLOT_WAIT_MS = 2_000;
const HEARTBEAT_EVERY_MS = 5_000;

export interface ManualHooks {
  /** Tells Temporal the activity is alive. */
  heartbeat(): void;
}

export interface ManualAttemptResult {
  deliveryId: string;
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** No slot came free in time: nothing was sent or recorded; the same attempt is to be made later. */
  deferred?: true;
}

type Answer = Pick<ManualAttemptResult, 'ok' | 'statusCode' | 'error'>;

function manualSpec(deliveryId: string, attemptId: string): AttemptSpec {
  return { attemptId, scheduledAttempt: null, leaseId: leaseId(deliveryId, attemptId), lastAttempt: false };
}

function recordedAnswer(recorded: NonNullable<LoadedDelivery['recorded']>): Answer {
  const { statusCode, error } = recorded;
  return { ok: statusCode !== null && statusCode >= 200 && statusCode < 300, statusCode, error };
}

/** Sends a manual attempt that holds its slot (or records it as not sent, the circuit being open). */
async function send(deps: DeliverDependencies, delivery: LoadedDelivery, spec: AttemptSpec, slot: SlotOutcome, secrets: SecretCache) {
  const outcome = slot === 'open' ? CIRCUIT_OPEN : await makeAttempt(deps, delivery, secrets);
  const { ok, statusCode, error } = await recordAttempt(deps, delivery, spec, outcome);
  return { ok, statusCode, error };
}

function slotRequest(delivery: LoadedDelivery, spec: AttemptSpec) {
  return { leaseId: spec.leaseId, deliveryId: delivery.id, endpointId: delivery.endpointId, organisationId: delivery.organisationId };
}

async function whileAlive<T>(hooks: ManualHooks, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => hooks.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * POST /webhook-deliveries/{id}/resend: one manual attempt, under the attempt id the API chose, or
 * `deferred` when no slot came free within MANUAL_SLOT_WAIT_MS.
 */
export async function resendDelivery(
  deps: DeliverDependencies,
  input: { deliveryId: string; attemptId: string },
  hooks: ManualHooks,
): Promise<ManualAttemptResult> {
  return whileAlive(hooks, async () => {
    const [delivery] = await loadDeliveries(deps.db, { ids: [input.deliveryId], attemptIds: [input.attemptId] });
    if (!delivery) return { deliveryId: input.deliveryId, ok: false, statusCode: null, error: 'delivery not found' };
    if (delivery.recorded) return { deliveryId: delivery.id, ...recordedAnswer(delivery.recorded) };
    const spec = manualSpec(delivery.id, input.attemptId);
    const stop = stopReason(delivery);
    if (stop) {
      const { ok, statusCode, error } = await recordAttempt(deps, delivery, spec, stopped(stop));
      return { deliveryId: delivery.id, ok, statusCode, error };
    }
    const slot =
      (
        await waitForSlots(deps.db, deps.config, [slotRequest(delivery, spec)], {
          patienceMs: MANUAL_SLOT_WAIT_MS,
          maxMs: MANUAL_SLOT_WAIT_MS,
        })
      ).get(spec.leaseId) ?? 'busy';
    if (slot === 'busy') return { deliveryId: delivery.id, ok: false, statusCode: null, error: null, deferred: true };
    return { deliveryId: delivery.id, ...(await send(deps, delivery, spec, slot, new SecretCache(deps.encryptionKey))) };
  });
}

/** Where a recovery has got to among the endpoint's deliveries, oldest first (exclusive). */
export interface RecoveryCursor {
  createdAt: string;
  id: string;
}

export interface RecoverInput {
  /** The recovery (its workflow's run id): names the attempts it makes. */
  recoveryRunId: string;
  organisationId: string;
  endpointId: string;
  /** ISO 8601: deliveries created from this time ... */
  since: string;
  /** ... up to this one (when the recovery was asked for). */
  until: string;
  /**
   * The endpoint's URL when the recovery was asked for: the recovery sends only deliveries made for
   * it (unless includeOtherUrls), and stops if the endpoint's URL changes meanwhile. Absent: the
   * endpoint's URL at each step.
   */
  url?: string;
  /** Also deliveries made for another URL than the endpoint's (the caller confirmed it). */
  includeOtherUrls?: boolean;
  /** Deliveries of the previous step that found no slot: tried again first. */
  retry?: readonly string[];
  /** Where the previous step's new deliveries ended. */
  after?: RecoveryCursor;
  /** New deliveries this step takes at most (default RECOVERY_STEP_SIZE). */
  take?: number;
}

/** What one step of a recovery did. */
export interface RecoverStepResult {
  /** Manual attempts made (or found made, on a retried activity). */
  attempted: number;
  succeeded: number;
  /** New deliveries taken from the endpoint's failed ones (attempted, deferred or settled meanwhile). */
  taken: number;
  /** Fewer failed deliveries were left than asked for: no more will be found. */
  exhausted: boolean;
  /** Where the new deliveries ended (absent when none were taken). */
  after?: RecoveryCursor;
  /** Deliveries that found no slot within MANUAL_SLOT_WAIT_MS: to try again. */
  deferred: string[];
  /** Why the recovery must end here, if it must. */
  stop?: 'endpoint disabled' | 'endpoint deleted' | 'endpoint url changed';
}

export interface RecoverResult {
  attempted: number;
  succeeded: number;
  /** Why the recovery ended before it had sent every delivery it took. */
  stoppedBecause?: string;
}

/**
 * One step of POST /webhook-endpoints/{id}/recover (workflows/webhook-manual.ts runs them a pause
 * apart): a manual attempt for each of the deliveries of the previous step that found no slot, and
 * for the next `take` deliveries of the endpoint created in [since, until] that are failed and made
 * for its URL (any URL with includeOtherUrls), concurrently within the endpoint's slots. A delivery
 * settled meanwhile (a resend succeeded) is left alone. An endpoint disabled, deleted or given
 * another URL since the recovery was asked for ends it, nothing more sent.
 */
export async function recoverStep(deps: DeliverDependencies, input: RecoverInput, hooks: ManualHooks): Promise<RecoverStepResult> {
  return whileAlive(hooks, async () => {
    const take = Math.max(0, input.take ?? RECOVERY_STEP_SIZE);
    const page = take > 0 ? await failedPage(deps.db, input, take) : [];
    const ids = [...(input.retry ?? []), ...page.map((d) => d.id)];
    const last = page.at(-1);
    const result: RecoverStepResult = {
      attempted: 0,
      succeeded: 0,
      taken: page.length,
      exhausted: page.length < take,
      ...(last ? { after: { createdAt: last.createdAt.toISOString(), id: last.id } } : {}),
      deferred: [],
    };
    if (ids.length === 0) return result;
    const attemptIds = ids.map((id) => recoveryAttemptId(input.recoveryRunId, id));
    const deliveries = (await loadDeliveries(deps.db, { ids, attemptIds })).filter(
      (d) => d.organisationId === input.organisationId && d.endpointId === input.endpointId,
    );
    const count = (answer: Answer) => {
      result.attempted += 1;
      if (answer.ok) result.succeeded += 1;
    };
    const toSend: Array<{ delivery: LoadedDelivery; spec: AttemptSpec }> = [];
    for (const delivery of deliveries) {
      if (delivery.recorded) count(recordedAnswer(delivery.recorded));
      else if (delivery.status === 'failed')
        toSend.push({ delivery, spec: manualSpec(delivery.id, recoveryAttemptId(input.recoveryRunId, delivery.id)) });
    }
    // Every delivery here is the endpoint's: the first tells how the endpoint stands now.
    const first = toSend[0]?.delivery;
    if (first) {
      const moved = input.url !== undefined && first.endpoint.url !== input.url;
      const stop = stopReason(first) ?? (moved ? 'endpoint url changed' : undefined);
      if (stop) return { ...result, stop };
    }
    const secrets = new SecretCache(deps.encryptionKey);
    const unordered = toSend.filter(({ delivery }) => delivery.orderingKey === null);
    const chains = await orderedChains(deps.db, input, toSend);
    const bySpec = new Map(unordered.map((entry) => [entry.spec.leaseId, entry]));
    const sends: Array<Promise<void>> = chains.map((chain) =>
      sendInOrder(deps, chain, secrets, count).then((deferred) => {
        result.deferred.push(...deferred);
      }),
    );
    const answers = await waitForSlots(
      deps.db,
      deps.config,
      unordered.map(({ delivery, spec }) => slotRequest(delivery, spec)),
      { patienceMs: MANUAL_SLOT_WAIT_MS, maxMs: MANUAL_SLOT_WAIT_MS },
      (lease, slot) => {
        const { delivery, spec } = bySpec.get(lease)!;
        sends.push(send(deps, delivery, spec, slot, secrets).then(count));
      },
    );
    // Every attempt is recorded (or has failed to be) before the step answers; a database failure
    // fails the activity, whose retry replays what was recorded.
    const settled = await Promise.allSettled(sends);
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure) throw failure.reason;
    result.deferred.push(...unordered.filter(({ spec }) => answers.get(spec.leaseId) === 'busy').map(({ delivery }) => delivery.id));
    return result;
  });
}

type Planned = { delivery: LoadedDelivery; spec: AttemptSpec };

/**
 * For an endpoint that orders per object (src/webhooks/ordering.ts), a recovery sends an object's
 * deliveries as delivery does: one at a time, in sequence order. The step's deliveries of each object
 * form a chain; a chain is left out when an earlier delivery of its object in the recovery's range is
 * still failed and not in this step (its own recovery attempt failed, so the receiver still misses
 * it: what follows would overtake it).
 */
async function orderedChains(db: Database, input: RecoverInput, toSend: readonly Planned[]): Promise<Planned[][]> {
  const byKey = new Map<string, Planned[]>();
  for (const entry of toSend) {
    const key = entry.delivery.orderingKey;
    if (key !== null) byKey.set(key, [...(byKey.get(key) ?? []), entry]);
  }
  if (byKey.size === 0) return [];
  const chains = [...byKey.values()].map((chain) =>
    chain.sort((a, b) => (a.delivery.event.sequence ?? 0) - (b.delivery.event.sequence ?? 0)),
  );
  const heads = chains.map((chain) => chain[0]!.delivery);
  const anyUrl = input.includeOtherUrls === true;
  const blocked = await db.$queryRaw<Array<{ key: string }>>`
    SELECT h.key FROM unnest(${heads.map((d) => d.orderingKey!)}::text[], ${heads.map((d) => d.event.sequence ?? 0)}::int[]) AS h(key, seq)
     WHERE EXISTS (
       SELECT 1 FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e."organisationId" = d."organisationId" AND e.id = d."endpointId"
        WHERE d."organisationId" = ${input.organisationId} AND d."endpointId" = ${input.endpointId}
          AND d."orderingKey" = h.key AND d.sequence < h.seq AND d.status = 'failed'
          AND d."createdAt" >= ${new Date(input.since)} AND d."createdAt" <= ${new Date(input.until)}
          AND (${anyUrl}::boolean OR d.url = coalesce(${input.url ?? null}::text, e.url))
          AND d.id <> ALL(${toSend.map((entry) => entry.delivery.id)}::text[]))`;
  const left = new Set(blocked.map((row) => row.key));
  return chains.filter((chain) => !left.has(chain[0]!.delivery.orderingKey!));
}

/**
 * One object's deliveries, one at a time in sequence order, each waiting for its slot. The chain
 * stops at the first that fails (the rest stay failed: they would overtake it) and, at the first
 * that finds no slot, answers it and the rest as deferred, tried first in the next step.
 */
async function sendInOrder(
  deps: DeliverDependencies,
  chain: readonly Planned[],
  secrets: SecretCache,
  count: (answer: Answer) => void,
): Promise<string[]> {
  for (const [place, { delivery, spec }] of chain.entries()) {
    const slot =
      (
        await waitForSlots(deps.db, deps.config, [slotRequest(delivery, spec)], {
          patienceMs: MANUAL_SLOT_WAIT_MS,
          maxMs: MANUAL_SLOT_WAIT_MS,
        })
      ).get(spec.leaseId) ?? 'busy';
    if (slot === 'busy') return chain.slice(place).map((entry) => entry.delivery.id);
    const answer = await send(deps, delivery, spec, slot, secrets);
    count(answer);
    if (!answer.ok) return [];
  }
  return [];
}

async function failedPage(db: Database, input: RecoverInput, take: number): Promise<Array<{ id: string; createdAt: Date }>> {
  const afterAt = input.after ? new Date(input.after.createdAt) : new Date(0);
  const afterId = input.after?.id ?? '';
  const anyUrl = input.includeOtherUrls === true;
  return db.$queryRaw<Array<{ id: string; createdAt: Date }>>`
    SELECT d.id, d."createdAt" FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e."organisationId" = d."organisationId" AND e.id = d."endpointId"
     WHERE d."organisationId" = ${input.organisationId} AND d."endpointId" = ${input.endpointId} AND d.status = 'failed'
       AND d."createdAt" >= ${new Date(input.since)} AND d."createdAt" <= ${new Date(input.until)}
       AND (d."createdAt", d.id) > (${afterAt}, ${afterId})
       AND (${anyUrl}::boolean OR d.url = coalesce(${input.url ?? null}::text, e.url))
     ORDER BY d."createdAt", d.id
     LIMIT ${take}`;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The id of the attempt a recovery makes for a delivery: the same on every retry of the recovery, another for the next recovery. */
export function recoveryAttemptId(recoveryRunId: string, deliveryId: string): string {
  const bytes = createHash('sha512').update(`${recoveryRunId}:${deliveryId}`).digest();
  let out = '';
  for (const byte of bytes) {
    if ((byte & 63) < 62) out += BASE62[byte & 63];
    if (out.length === 22) break;
  }
  return `${ID_PREFIXES.webhookAttempt}_${out}`;
}
