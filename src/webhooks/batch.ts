import type { Database } from '../db/client.ts';
import {
  CIRCUIT_OPEN,
  loadDeliveries,
  makeAttempt,
  recordAttempt,
  releaseNext,
  scheduledSpec,
  SecretCache,
  settledOutcome,
  stopped,
  stopReason,
  type AttemptResult,
  type DeliverDependencies,
  type LoadedDelivery,
  type Outcome,
} from './deliver.ts';
import { claimNextInLine } from './ordering.ts';
import { retryDelayMs } from './retry-delay.ts';
import { leaseId, waitForSlots, type GiveUpReason, type SlotOutcome } from './slots.ts';

/**
 * The first attempt of every delivery of a batch (whb_), the one activity of the deliverBatch
 * workflow:
 *   1. loads the whole batch, with each delivery's event, endpoint and any recorded first attempt,
 *      in one query;
 *   2. asks for slots for all of them at once (slots.ts) and sends each delivery as soon as it has
 *      one, concurrently (at most SEND_CONCURRENCY per worker process), recording each attempt the
 *      moment it is answered;
 *   3. starts the retry workflow (workflow id = the delivery id) of each delivery whose first attempt
 *      failed with attempts left;
 *   4. puts back what found no slot (its endpoint or organisation at its bound, e.g. a slow
 *      receiver; see SLOT_WAIT_MS): out of this batch, into the outbox, where the dispatcher's sweep
 *      claims it again as slots free up. When the first attempt is also the last (an empty retry
 *      schedule), one that finds its endpoint's circuit open is put back too, until the circuit
 *      lets attempts through: a delivery's last attempt is always really sent.
 *
 * Run again after a crash (another worker takes the workflow task over once it times out), the
 * recorded attempts are replayed, not resent; only what was in flight is sent again. A delivery's result
 * does not wait for the others: a slow receiver only keeps the batch open, never another delivery.
 */

export interface DeliverBatchInput {
  batchId: string;
  /** Delays after attempt 1, 2, ... (WEBHOOK_RETRY_SCHEDULE when the batch started). */
  scheduleMs: number[];
  /** Per-attempt timeout (WEBHOOK_ATTEMPT_TIMEOUT). */
  attemptTimeoutMs: number;
}

export type BatchDeliveryOutcome =
  /** Answered 2xx. */
  | 'succeeded'
  /** Failed; its retry workflow (id = the delivery id) carries on with the schedule. */
  | 'retrying'
  /** Failed for good (no attempts left, or its endpoint was disabled or deleted). */
  | 'failed'
  /** Not sent: no free slot (or an open circuit at the last attempt); put back into the outbox for a later batch. */
  | 'deferred'
  /** Settled before this batch reached it (a manual attempt succeeded meanwhile). */
  | 'skipped';

export interface DeliverBatchResult {
  batchId: string;
  deliveries: Array<{ id: string; outcome: BatchDeliveryOutcome; statusCode: number | null; error: string | null }>;
}

export interface BatchHooks {
  /** Tells Temporal the activity is alive. */
  heartbeat(): void;
  /** Starts the retry workflow of a delivery whose first attempt failed, `delayMs` from now. */
  startRetry(delivery: LoadedDelivery, delayMs: number): Promise<void>;
}

/**
 * A first attempt waits for a slot in the worker's line (slots.ts) while it would get one within
 * SLOT_WAIT_MS, judging by its endpoint's recent attempts (a burst's turn over in milliseconds),
 * and SLOT_WAIT_MAX_MS at most; then it is put back (a slow receiver's backlog waits in the outbox).
 */
export const SLOT_WAIT_MS = 3_000;
const SLOT_WAIT_MAX_MS = 15_000;
/** A put-back delivery is claimed again no sooner than this (and only while its endpoint has a free slot). */
const PUT_BACK_MS = 1_000;
const HEARTBEAT_EVERY_MS = 5_000;

export async function attemptBatch(deps: DeliverDependencies, input: DeliverBatchInput, hooks: BatchHooks): Promise<DeliverBatchResult> {
  const deliveries = await loadDeliveries(deps.db, { batchId: input.batchId, scheduledAttempt: 1 });
  const lastAttempt = input.scheduleMs.length === 0;
  const secrets = new SecretCache(deps.encryptionKey);
  const results = new Map<string, DeliverBatchResult['deliveries'][number]>();
  const work: Promise<void>[] = [];
  const heartbeat = setInterval(() => hooks.heartbeat(), HEARTBEAT_EVERY_MS);

  // An ordered object's next delivery is chained into this batch (below), not released to a dispatcher.
  const recordDeps = { ...deps, release: undefined };
  const chained: LoadedDelivery[] = [];
  const started = Date.now();

  const conclude = async (delivery: LoadedDelivery, result: AttemptResult) => {
    let outcome: BatchDeliveryOutcome;
    if (result.ok) outcome = 'succeeded';
    // A replay after later attempts were made (this batch ran again after a crash): the retry
    // workflow took over from attempt 1, whatever the delivery's status now.
    else if (result.replayed && delivery.attemptCount > 1) outcome = 'retrying';
    else if (result.stop || lastAttempt) outcome = 'failed';
    else {
      // Idempotent: a replayed failure whose retry workflow started already meets its refusal.
      await hooks.startRetry(delivery, retryDelayMs(input.scheduleMs[0]!, result.retryAfterMs));
      outcome = 'retrying';
    }
    results.set(delivery.id, { id: delivery.id, outcome, statusCode: result.statusCode, error: result.error });
    if (delivery.orderingKey !== null && (outcome === 'succeeded' || outcome === 'failed')) await chain(delivery);
  };
  // Every attempt joins `work`, which the batch awaits before it answers; the promise is for a chain.
  const attempt = (delivery: LoadedDelivery, outcome: Outcome | Promise<Outcome>): Promise<void> => {
    const made = Promise.resolve(outcome)
      .then((answer) => recordAttempt(recordDeps, delivery, scheduledSpec(delivery.id, 1, lastAttempt), answer))
      .then((result) => conclude(delivery, result));
    work.push(made);
    return made;
  };

  /**
   * Once a delivery of an ordered object settles, the object's next delivery to the endpoint
   * (src/webhooks/ordering.ts), if it is waiting, joins this batch and is sent by it: no new
   * workflow, no dispatch window, so an order's events follow each other within milliseconds of
   * the receiver's answers. For CHAIN_FOR_MS at most; then the worker's dispatcher starts it.
   */
  const chain = async (settled: LoadedDelivery): Promise<void> => {
    if (Date.now() - started > CHAIN_FOR_MS) return releaseNext(deps, settled);
    const claim = claimNextInLine(input.batchId, settled);
    if (!claim) return;
    const [delivery] = await loadDeliveries(deps.db, { claim, scheduledAttempt: 1 });
    if (!delivery) return;
    chained.push(delivery);
    const stop = stopReason(delivery);
    if (stop) return attempt(delivery, stopped(stop));
    const lease = leaseId(delivery.id, 1);
    const request = { leaseId: lease, deliveryId: delivery.id, endpointId: delivery.endpointId, organisationId: delivery.organisationId };
    const slots = await waitForSlots(deps.db, deps.config, [request], { patienceMs: SLOT_WAIT_MS, maxMs: SLOT_WAIT_MAX_MS });
    const slot = slots.get(lease) ?? 'busy';
    if (slot === 'busy' || (slot === 'open' && lastAttempt)) {
      await putBack(deps.db, input.batchId, [delivery.id], slot === 'busy' ? 'soon' : 'until the circuit closes');
      results.set(delivery.id, { id: delivery.id, outcome: 'deferred', statusCode: null, error: null });
      return;
    }
    return send(delivery, slot);
  };
  /** A delivery holding a slot sent (or, its circuit open, recorded as not sent). */
  const send = (delivery: LoadedDelivery, slot: SlotOutcome) =>
    attempt(delivery, slot === 'open' ? CIRCUIT_OPEN : sends.run(() => makeAttempt(deps, delivery, secrets, input.attemptTimeoutMs)));

  try {
    const toSend: LoadedDelivery[] = [];
    for (const delivery of deliveries) {
      const settled = settledOutcome(delivery);
      if (settled && delivery.recorded) work.push(conclude(delivery, settled));
      else if (settled) results.set(delivery.id, { id: delivery.id, outcome: 'skipped', statusCode: null, error: null });
      else {
        const stop = stopReason(delivery);
        if (stop) void attempt(delivery, stopped(stop));
        else toSend.push(delivery);
      }
    }

    const byLease = new Map(toSend.map((delivery) => [leaseId(delivery.id, 1), delivery]));
    const gaveUp = new Map<string, GiveUpReason>();
    const circuitOpen: LoadedDelivery[] = [];
    const answers = await waitForSlots(
      deps.db,
      deps.config,
      toSend.map((delivery) => ({
        leaseId: leaseId(delivery.id, 1),
        deliveryId: delivery.id,
        endpointId: delivery.endpointId,
        organisationId: delivery.organisationId,
      })),
      { patienceMs: SLOT_WAIT_MS, maxMs: SLOT_WAIT_MAX_MS, gaveUp },
      (lease: string, slot: SlotOutcome) => {
        const delivery = byLease.get(lease)!;
        if (slot === 'open' && lastAttempt) circuitOpen.push(delivery);
        else void send(delivery, slot);
      },
    );
    if (circuitOpen.length > 0) {
      await putBack(
        deps.db,
        input.batchId,
        circuitOpen.map((delivery) => delivery.id),
        'until the circuit closes',
      );
      for (const delivery of circuitOpen) results.set(delivery.id, { id: delivery.id, outcome: 'deferred', statusCode: null, error: null });
      deps.logger.info(
        { batchId: input.batchId, putBack: circuitOpen.length },
        'last attempts put back into the outbox until their endpoint’s circuit closes',
      );
    }
    const busy = toSend.filter((delivery) => answers.get(leaseId(delivery.id, 1)) === 'busy');
    if (busy.length > 0) {
      await putBack(
        deps.db,
        input.batchId,
        busy.map((delivery) => delivery.id),
      );
      for (const delivery of busy) results.set(delivery.id, { id: delivery.id, outcome: 'deferred', statusCode: null, error: null });
      const reasons: Partial<Record<GiveUpReason, number>> = {};
      for (const reason of gaveUp.values()) reasons[reason] = (reasons[reason] ?? 0) + 1;
      deps.logger.info(
        { batchId: input.batchId, putBack: busy.length, reasons },
        'first attempts put back into the outbox for want of a slot',
      );
    }

    // Every attempt is recorded (or has failed to be) before the activity answers; a database
    // failure fails the activity, whose retry replays what was recorded.
    const settled = await Promise.allSettled(work);
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure) throw failure.reason;
  } finally {
    clearInterval(heartbeat);
  }
  return { batchId: input.batchId, deliveries: [...deliveries, ...chained].map((delivery) => results.get(delivery.id)!) };
}

/** How long a batch goes on sending the next deliveries of the ordered objects it settled. */
const CHAIN_FOR_MS = 30_000;

/**
 * Back into the outbox, claimable again after PUT_BACK_MS, or for a last attempt that found its
 * endpoint's circuit open, once the circuit lets attempts through (and PUT_BACK_MS at least).
 */
async function putBack(
  db: Database,
  batchId: string,
  deliveryIds: string[],
  when: 'soon' | 'until the circuit closes' = 'soon',
): Promise<void> {
  const circuit = when === 'until the circuit closes';
  await db.$executeRaw`
    UPDATE webhook_deliveries d
       SET "batchId" = NULL, "workflowStartedAt" = NULL, "updatedAt" = now(),
           "availableAt" = greatest(
             now() + make_interval(secs => ${PUT_BACK_MS}::float8 / 1000),
             CASE WHEN ${circuit}::boolean THEN e."circuitOpenUntil" END)
      FROM webhook_endpoints e
     WHERE e."organisationId" = d."organisationId" AND e.id = d."endpointId"
       AND d.id = ANY(${deliveryIds}::text[]) AND d."batchId" = ${batchId} AND d.status = 'pending'`;
}

/**
 * Sends in flight in this worker process, whatever their batch: bounds sockets and memory. Slots
 * (slots.ts) bound them per endpoint and per organisation across processes; this bounds one process.
 */
export const SEND_CONCURRENCY = 512;

class Limiter {
  #running = 0;
  readonly #queue: Array<() => void> = [];
  constructor(readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its place straight to the next waiter, so none can slip in between.
    if (this.#running >= this.limit) await new Promise<void>((resolve) => this.#queue.push(resolve));
    else this.#running += 1;
    try {
      return await task();
    } finally {
      const next = this.#queue.shift();
      if (next) next();
      else this.#running -= 1;
    }
  }
}

const sends = new Limiter(SEND_CONCURRENCY);
