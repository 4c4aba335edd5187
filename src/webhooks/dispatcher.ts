import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { takeLease } from '../db/periodic.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { TemporalAccess } from '../temporal.ts';
import { heldBehindEarlier } from './ordering.ts';
import { deleteExpiredSlots } from './slots.ts';
import { startBatchWorkflow, type DeliveryLabel, type WebhookWorkflowSettings } from './starts.ts';
import { context, ROOT_CONTEXT, type Context } from '@opentelemetry/api';

export interface DispatcherOptions {
  /** How often this process offers to sweep (default 1 s); across processes it runs once per period. */
  sweepIntervalMs?: number;
  /**
   * How old an unclaimed delivery must be before the sweep takes it (default 2 s): younger ones are
   * left to the dispatch that follows their transaction's commit.
   */
  graceMs?: number;
  /** Deliveries one sweep claims at most (default 1,280). */
  sweepLimit?: number;
  /** Prune delivery history older than WEBHOOK_RETENTION (the workers do; default false). */
  prune?: boolean;
  /** How often history is pruned, across processes (default 1 h). */
  pruneIntervalMs?: number;
}

export interface DispatchOutcome {
  /** Deliveries whose batch started now, or was found started already. */
  started: string[];
  failed: string[];
  batchIds: string[];
}

type Claimed = DeliveryLabel;

/** Batch starts the token bucket lets through at once after a quiet spell. */
const BURST = 3;

/**
 * From the outbox to Temporal: groups pending deliveries into batches and starts one deliverBatch
 * workflow per batch (src/webhooks/batch.ts makes the first attempts).
 *
 * `dispatch` is called right after the transaction that recorded deliveries commits. The ids of
 * one call (one or a few source events) are never split; calls are grouped until
 * WEBHOOK_BATCH_SIZE deliveries or WEBHOOK_BATCH_WINDOW after the first. Partial batches start at
 * most WEBHOOK_BATCHES_PER_SECOND times a second (a token bucket): an idle system waits only the
 * window, a busy one lets batches fill up, so the Temporal work per delivery (most of a delivery's
 * CPU on a small machine: bench/webhooks.ts) falls as the load rises.
 *
 * A batch is claimed in PostgreSQL before its workflow starts: its deliveries get the batch id
 * (whb_), which is the workflow id. Temporal refuses a second run of the same id
 * (REJECT_DUPLICATE, even after the first completed) and the refusal counts as started;
 * workflowStartedAt is written after the start. So a crash between claim and start only leaves the
 * sweep to start the same batch id, and nothing is lost or sent twice.
 *
 * The sweep (API and every worker offer; a lease in periodic_tasks, src/db/periodic.ts, makes it run
 * once per period across all of them) starts claimed batches that never started, claims what was recorded but
 * never dispatched (older than the grace period) and what a batch put back for want of a slot —
 * the latter only as far as its endpoint has free slots — and removes slots whose holder died. In
 * the workers it also prunes history older than WEBHOOK_RETENTION (hourly).
 */
export class WebhookDispatcher {
  readonly #sweepIntervalMs: number;
  readonly #graceMs: number;
  readonly #sweepLimit: number;
  readonly #prune: boolean;
  readonly #pruneIntervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Dispatched ids, per call, with the trace context of the call (a batch starts in its first call's). */
  #buffer: Array<{ ids: string[]; context: Context }> = [];
  #buffered = 0;
  #windowTimer: NodeJS.Timeout | undefined;
  /** Batch starts allowed now (a token bucket refilled at WEBHOOK_BATCHES_PER_SECOND, holding up to BURST). */
  #tokens = BURST;
  #tokensAt = Date.now();
  /** Calls of `dispatch` so far: a held partial batch that saw none for a window is started. */
  #arrivals = 0;

  constructor(
    readonly db: Database,
    readonly temporal: Pick<TemporalAccess, 'client'> | undefined,
    readonly config: Config,
    readonly logger: Logger,
    options: DispatcherOptions = {},
  ) {
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
    this.#graceMs = options.graceMs ?? 2_000;
    this.#sweepLimit = options.sweepLimit ?? 1_280;
    this.#prune = options.prune ?? false;
    this.#pruneIntervalMs = options.pruneIntervalMs ?? 3_600_000;
  }

  get #settings(): WebhookWorkflowSettings {
    return {
      taskQueue: this.config.TEMPORAL_TASK_QUEUE,
      scheduleMs: this.config.WEBHOOK_RETRY_SCHEDULE,
      attemptTimeoutMs: this.config.WEBHOOK_ATTEMPT_TIMEOUT,
    };
  }

  /** Fire and forget: these deliveries join the next batch; what cannot be started is left to the sweep. */
  dispatch(deliveryIds: readonly string[]): void {
    if (deliveryIds.length === 0 || !this.temporal) return;
    this.#buffer.push({ ids: [...deliveryIds], context: context.active() });
    this.#buffered += deliveryIds.length;
    this.#arrivals += 1;
    if (this.#buffered >= this.config.WEBHOOK_BATCH_SIZE) this.#flush('full');
    else this.#windowTimer ??= setTimeout(() => this.#flush('window'), this.config.WEBHOOK_BATCH_WINDOW);
  }

  /** Starts what is buffered now and waits for every dispatch in flight (tests, shutdown). */
  async flush(): Promise<void> {
    this.#flush('force');
    await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Starts the buffered deliveries as batches: full ones at once (each spends a token, going into
   * debt). The last, partial one is started when `force`d, or at the end of its window if a token
   * allows it; else it keeps filling while deliveries keep coming, until the next token. When the
   * buffer filled up, what does not fit a full batch opens a new window: more is coming.
   *
   * A partial batch that waits for a token is started anyway once a whole window passes with
   * nothing joining it ('quiet'): under steady load it fills up as before, but the last one of a
   * burst leaves a window after the burst ends, not once the full batches' debt is repaid (up to
   * 0.8 s at the defaults; test/webhooks/webhook-delivery.test.ts).
   */
  #flush(why: 'full' | 'window' | 'quiet' | 'force'): void {
    clearTimeout(this.#windowTimer);
    this.#windowTimer = undefined;
    const size = this.config.WEBHOOK_BATCH_SIZE;
    type Batch = { ids: string[]; context: Context };
    const ready: Batch[] = [];
    let open: Batch = { ids: [], context: ROOT_CONTEXT };
    for (const group of this.#buffer) {
      if (open.ids.length > 0 && open.ids.length + group.ids.length > size) {
        ready.push(open);
        open = { ids: [], context: ROOT_CONTEXT };
      }
      if (open.ids.length === 0) open.context = group.context;
      open.ids.push(...group.ids);
    }
    if (open.ids.length >= size) {
      ready.push(open);
      open = { ids: [], context: ROOT_CONTEXT };
    }
    this.#buffer = [];
    this.#buffered = 0;
    for (let i = 0; i < ready.length; i += 1) this.#takeToken(true);
    if (open.ids.length > 0) {
      const window = this.config.WEBHOOK_BATCH_WINDOW;
      const wait = why === 'full' ? window : this.#takeToken(why === 'force' || why === 'quiet');
      if (wait === 0) ready.push(open);
      else {
        this.#buffer = [open];
        this.#buffered = open.ids.length;
        const arrivals = this.#arrivals;
        this.#windowTimer = setTimeout(() => this.#flush(this.#arrivals === arrivals ? 'quiet' : 'window'), Math.min(wait, window));
      }
    }
    for (const batch of ready) this.#track(context.with(batch.context, () => this.startBatch(batch.ids)));
  }

  /** Takes a token (going into debt when `force`d) and answers 0, or answers how long until one comes. */
  #takeToken(force: boolean): number {
    const rate = this.config.WEBHOOK_BATCHES_PER_SECOND;
    const now = Date.now();
    this.#tokens = Math.min(BURST, this.#tokens + ((now - this.#tokensAt) * rate) / 1000);
    this.#tokensAt = now;
    if (this.#tokens >= 1 || force) {
      this.#tokens = Math.max(-BURST, this.#tokens - 1);
      return 0;
    }
    return Math.ceil(((1 - this.#tokens) * 1000) / rate);
  }

  /**
   * Claims these deliveries (those still pending and unclaimed) as one batch (several when they
   * exceed WEBHOOK_BATCH_SIZE, split between source events) and starts it. Never throws: what could
   * not be started is logged and left to the sweep.
   */
  async startBatch(deliveryIds: readonly string[]): Promise<DispatchOutcome> {
    const outcome: DispatchOutcome = { started: [], failed: [], batchIds: [] };
    if (deliveryIds.length === 0) return outcome;
    if (!this.temporal) {
      this.logger.warn({ count: deliveryIds.length }, 'webhook deliveries not started: no Temporal configured (TEMPORAL_ADDRESS)');
      return { ...outcome, failed: [...deliveryIds] };
    }
    try {
      const batchId = newId('webhookBatch');
      const claimed = await this.#claim(batchId, deliveryIds);
      for (const [id, labels] of await this.#split(batchId, claimed)) await this.#start(id, labels, outcome);
    } catch (error) {
      this.logger.warn({ err: error, count: deliveryIds.length }, 'webhook deliveries not dispatched; the sweep will retry');
      const started = new Set(outcome.started);
      outcome.failed = deliveryIds.filter((id) => !started.has(id));
    }
    return outcome;
  }

  /** Claims those still pending and unclaimed, but none that waits for an earlier delivery of its object (ordering.ts). */
  async #claim(batchId: string, deliveryIds: readonly string[]): Promise<Claimed[]> {
    return this.db.$queryRaw<Claimed[]>`
      UPDATE webhook_deliveries d SET "batchId" = ${batchId}
       WHERE d.id = ANY(${[...deliveryIds]}::text[]) AND d."batchId" IS NULL AND d."workflowStartedAt" IS NULL AND d.status = 'pending'
         AND NOT ${heldBehindEarlier('d')}
      RETURNING d.id AS "deliveryId", d."organisationId", d."accountId", d."endpointId", d."eventId", d."eventType"`;
  }

  /**
   * A claim larger than a batch (one dispatch call of many events) is re-labelled into batches of
   * whole source events: a batch's delivery ids must fit its search attribute.
   */
  async #split(batchId: string, claimed: Claimed[]): Promise<Array<[string, Claimed[]]>> {
    const groups = groupByEvent(claimed, this.config.WEBHOOK_BATCH_SIZE);
    if (groups.length <= 1) return groups.length ? [[batchId, groups[0]!]] : [];
    const batches: Array<[string, Claimed[]]> = [[batchId, groups[0]!]];
    for (const group of groups.slice(1)) {
      const id = newId('webhookBatch');
      await this.db
        .$executeRaw`UPDATE webhook_deliveries SET "batchId" = ${id} WHERE id = ANY(${group.map((d) => d.deliveryId)}::text[]) AND "batchId" = ${batchId}`;
      batches.push([id, group]);
    }
    return batches;
  }

  async #start(batchId: string, labels: Claimed[], outcome: DispatchOutcome): Promise<void> {
    const ids = labels.map((l) => l.deliveryId);
    try {
      const client = await this.temporal!.client();
      await startBatchWorkflow(client, this.logger, this.#settings, batchId, labels);
      await this.db
        .$executeRaw`UPDATE webhook_deliveries SET "workflowStartedAt" = now() WHERE "batchId" = ${batchId} AND "workflowStartedAt" IS NULL`;
      outcome.started.push(...ids);
      outcome.batchIds.push(batchId);
    } catch (error) {
      outcome.failed.push(...ids);
      this.logger.warn({ err: error, batchId, count: ids.length }, 'webhook batch not started; the sweep will retry');
    }
  }

  /**
   * One sweep, if no process swept within the period: answers how many deliveries it started.
   * Concurrent calls in one process share one sweep.
   */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#sweep().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #sweep(): Promise<number> {
    if (!this.temporal) return 0;
    let total = 0;
    try {
      if (await this.#claimPeriod('sweep', this.#sweepIntervalMs)) {
        total += await this.#restartUnstarted();
        total += await this.#claimWaiting();
        await deleteExpiredSlots(this.db);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'webhook sweep failed; next sweep will retry');
    }
    try {
      if (this.#prune && (await this.#claimPeriod('prune', this.#pruneIntervalMs))) await this.#pruneHistory();
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning webhook history failed; the next period will retry');
    }
    if (total > 0) this.logger.info({ started: total }, 'webhook sweep started deliveries');
    return total;
  }

  /** True for the one process that may run `task` this period: the holder of its lease (src/db/periodic.ts). */
  #claimPeriod(task: 'sweep' | 'prune', periodMs: number): Promise<boolean> {
    return takeLease(this.db, `webhook-${task}`, periodMs);
  }

  /** Batches claimed but never started (a crash between claim and start): started under the same id. */
  async #restartUnstarted(): Promise<number> {
    const rows = await this.db.$queryRaw<Array<Claimed & { batchId: string }>>`
      SELECT "batchId", id AS "deliveryId", "organisationId", "accountId", "endpointId", "eventId", "eventType"
        FROM webhook_deliveries
       WHERE "workflowStartedAt" IS NULL AND "batchId" IS NOT NULL AND status = 'pending'
         AND COALESCE("availableAt", "createdAt") < now() - make_interval(secs => ${this.#graceMs}::float8 / 1000)
       ORDER BY "batchId"
       LIMIT ${this.#sweepLimit}`;
    const byBatch = new Map<string, Claimed[]>();
    for (const { batchId, ...label } of rows) byBatch.set(batchId, [...(byBatch.get(batchId) ?? []), label]);
    const outcome: DispatchOutcome = { started: [], failed: [], batchIds: [] };
    for (const [batchId, labels] of byBatch) await this.#start(batchId, labels, outcome);
    return outcome.started.length;
  }

  /**
   * Deliveries waiting for a batch: recorded but never dispatched (older than the grace period), or
   * put back by a batch that found no free slot (once available). Each endpoint's are taken only up
   * to its free slots (one while its breaker is half-open), so a slow receiver's backlog waits here,
   * in the outbox, costing nothing, instead of circling through batches.
   */
  async #claimWaiting(): Promise<number> {
    const rows = await this.db.$queryRaw<Array<{ id: string; eventId: string }>>`
      WITH waiting AS (
        SELECT d.id, d."eventId", d."endpointId", d."createdAt",
               row_number() OVER (PARTITION BY d."endpointId" ORDER BY d."createdAt", d.id) AS place
          FROM webhook_deliveries d
         WHERE d."workflowStartedAt" IS NULL AND d."batchId" IS NULL AND d.status = 'pending'
           AND CASE WHEN d."availableAt" IS NULL
                    THEN d."createdAt" < now() - make_interval(secs => ${this.#graceMs}::float8 / 1000)
                    ELSE d."availableAt" <= now() END
           AND NOT ${heldBehindEarlier('d')}
      ), used AS (
        SELECT "endpointId", count(*) AS n FROM webhook_leases WHERE "expiresAt" > now() GROUP BY 1
      )
      SELECT w.id, w."eventId"
        FROM waiting w
        JOIN webhook_endpoints e ON e.id = w."endpointId"
        LEFT JOIN used u ON u."endpointId" = w."endpointId"
       WHERE w.place <= CASE WHEN e."consecutiveFailures" >= ${this.config.WEBHOOK_BREAKER_THRESHOLD}::int
                              AND NOT coalesce(e."circuitOpenUntil" > now(), false)
                             THEN 1 ELSE ${this.config.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT}::int END - coalesce(u.n, 0)
       ORDER BY w."createdAt", w.id
       LIMIT ${this.#sweepLimit}`;
    let started = 0;
    for (const group of groupByEvent(
      rows.map((r) => ({ deliveryId: r.id, eventId: r.eventId })),
      this.config.WEBHOOK_BATCH_SIZE,
    )) {
      started += (await this.startBatch(group.map((d) => d.deliveryId))).started.length;
    }
    return started;
  }

  /**
   * Source events older than WEBHOOK_RETENTION go, with their deliveries and attempts (foreign keys
   * cascade), unless a delivery of theirs is still pending. In chunks, so no statement holds locks long.
   */
  async #pruneHistory(): Promise<void> {
    let total = 0;
    for (;;) {
      const deleted = await this.db.$executeRaw`
        DELETE FROM webhook_events WHERE id IN (
          SELECT e.id FROM webhook_events e
           WHERE e."createdAt" < now() - make_interval(secs => ${this.config.WEBHOOK_RETENTION}::float8 / 1000)
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                              WHERE d."organisationId" = e."organisationId" AND d."eventId" = e.id AND d.status = 'pending')
           LIMIT 1000)`;
      total += deleted;
      if (deleted < 1000) break;
    }
    if (total > 0) this.logger.info({ events: total }, 'webhook history older than WEBHOOK_RETENTION pruned');
  }

  /** Starts the periodic sweep (idempotent). The timer does not keep the process alive. */
  start(): void {
    if (this.#timer || !this.temporal) return;
    this.#timer = setInterval(() => this.#track(this.sweep()), this.#sweepIntervalMs);
    this.#timer.unref();
  }

  /** Stops the sweep, starts what is buffered and waits for dispatches in flight. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  #track(promise: Promise<unknown>): void {
    this.#inFlight.add(promise);
    void promise.finally(() => this.#inFlight.delete(promise));
  }
}

/** Consecutive runs of whole source events, at most `size` deliveries each (an event larger than `size` alone). */
function groupByEvent<T extends { eventId: string }>(rows: readonly T[], size: number): T[][] {
  const byEvent = new Map<string, T[]>();
  for (const row of rows) byEvent.set(row.eventId, [...(byEvent.get(row.eventId) ?? []), row]);
  const groups: T[][] = [];
  let current: T[] = [];
  for (const event of byEvent.values()) {
    if (current.length > 0 && current.length + event.length > size) {
      groups.push(current);
      current = [];
    }
    current.push(...event);
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
