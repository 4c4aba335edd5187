import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../log.ts';
import type { TemporalAccess } from '../temporal.ts';

export interface DispatcherOptions {
  /** How often the sweep looks for deliveries whose workflow was never started (default 5 s). */
  sweepIntervalMs?: number;
  /**
   * How old an unstarted delivery must be before the sweep takes it (default 2 s): younger ones
   * are left to the dispatch that follows their transaction's commit.
   */
  graceMs?: number;
  /** Deliveries per sweep query (default 200). */
  batchSize?: number;
  /** Workflow starts in flight at once (default 32). */
  concurrency?: number;
}

export interface DispatchOutcome {
  /** Workflows started now, or found started already (by another process's sweep or dispatch). */
  started: string[];
  failed: string[];
}

/**
 * Starts one delivery workflow per pending delivery (workflow id = delivery id, so a repeated
 * start is harmless). `dispatch` is called right after the transaction that recorded deliveries
 * commits; a periodic sweep starts whatever could not be started then (Temporal down, process
 * crash), so no delivery is lost.
 *
 * A delivery's workflow is started at most once: Temporal refuses a second run of the same
 * workflow id (REJECT_DUPLICATE, even after the first completed), and that refusal counts as
 * started. workflowStartedAt is written after the start, so a crash in between only makes the
 * sweep try again and meet the refusal. Every process that has a dispatcher may sweep (the API
 * and each worker); they race harmlessly for the same rows.
 */
export class WebhookDispatcher {
  readonly #sweepIntervalMs: number;
  readonly #graceMs: number;
  readonly #batchSize: number;
  readonly #concurrency: number;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(
    readonly db: Database,
    readonly temporal: TemporalAccess | undefined,
    readonly config: Config,
    readonly logger: Logger,
    options: DispatcherOptions = {},
  ) {
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 5_000;
    this.#graceMs = options.graceMs ?? 2_000;
    this.#batchSize = options.batchSize ?? 200;
    this.#concurrency = options.concurrency ?? 32;
  }

  /** Fire and forget: starts these deliveries' workflows now; failures are left to the sweep. */
  dispatch(deliveryIds: readonly string[]): void {
    if (deliveryIds.length === 0 || !this.temporal) return;
    this.#track(this.startWorkflows(deliveryIds));
  }

  /**
   * Starts the workflows of these deliveries (those still pending and not marked started) and
   * marks them started. Never throws: what could not be started is logged and left to the sweep.
   */
  async startWorkflows(deliveryIds: readonly string[]): Promise<DispatchOutcome> {
    const outcome: DispatchOutcome = { started: [], failed: [] };
    if (deliveryIds.length === 0) return outcome;
    if (!this.temporal) {
      this.logger.warn({ count: deliveryIds.length }, 'webhook deliveries not started: no Temporal configured (TEMPORAL_ADDRESS)');
      return { started: [], failed: [...deliveryIds] };
    }
    try {
      const deliveries = await this.db.webhookDelivery.findMany({
        where: { id: { in: [...deliveryIds] }, workflowStartedAt: null, status: 'pending' },
        select: { id: true, organisationId: true, accountId: true, endpointId: true, eventType: true },
      });
      if (deliveries.length === 0) return outcome;
      const client = await this.temporal.client();
      const args = { scheduleMs: this.config.WEBHOOK_RETRY_SCHEDULE, attemptTimeoutMs: this.config.WEBHOOK_ATTEMPT_TIMEOUT };
      await eachLimited(deliveries, this.#concurrency, async (delivery) => {
        try {
          await client.workflow.start('deliverWebhook', {
            taskQueue: this.config.TEMPORAL_TASK_QUEUE,
            workflowId: delivery.id,
            args: [{ deliveryId: delivery.id, ...args }],
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            memo: {
              deliveryId: delivery.id,
              endpointId: delivery.endpointId,
              eventType: delivery.eventType,
              accountId: delivery.accountId,
              organisationId: delivery.organisationId,
            },
          });
          outcome.started.push(delivery.id);
        } catch (error) {
          if (error instanceof WorkflowExecutionAlreadyStartedError) outcome.started.push(delivery.id);
          else {
            outcome.failed.push(delivery.id);
            this.logger.warn({ err: error, deliveryId: delivery.id }, 'webhook delivery workflow not started; the sweep will retry');
          }
        }
      });
      if (outcome.started.length > 0) {
        await this.db.webhookDelivery.updateMany({
          where: { id: { in: outcome.started }, workflowStartedAt: null },
          data: { workflowStartedAt: new Date() },
        });
      }
    } catch (error) {
      this.logger.warn({ err: error, count: deliveryIds.length }, 'webhook deliveries not dispatched; the sweep will retry');
      const started = new Set(outcome.started);
      outcome.failed = deliveryIds.filter((id) => !started.has(id));
    }
    return outcome;
  }

  /**
   * One sweep: starts pending deliveries older than the grace period whose workflow is not marked
   * started, batch after batch, until none is left or a batch makes no progress. Answers how many
   * were started. Concurrent calls share one sweep.
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
      for (;;) {
        const due = await this.db.webhookDelivery.findMany({
          where: { workflowStartedAt: null, status: 'pending', createdAt: { lt: new Date(Date.now() - this.#graceMs) } },
          orderBy: { createdAt: 'asc' },
          take: this.#batchSize,
          select: { id: true },
        });
        if (due.length === 0) break;
        const { started } = await this.startWorkflows(due.map((d) => d.id));
        total += started.length;
        if (started.length < due.length) break;
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'webhook sweep failed; next sweep will retry');
    }
    if (total > 0) this.logger.info({ started: total }, 'webhook sweep started deliveries');
    return total;
  }

  /** Starts the periodic sweep (idempotent). The timer does not keep the process alive. */
  start(): void {
    if (this.#timer || !this.temporal) return;
    this.#timer = setInterval(() => this.#track(this.sweep()), this.#sweepIntervalMs);
    this.#timer.unref();
  }

  /** Stops the sweep and waits for dispatches in flight. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.allSettled([...this.#inFlight]);
  }

  #track(promise: Promise<unknown>): void {
    this.#inFlight.add(promise);
    void promise.finally(() => this.#inFlight.delete(promise));
  }
}

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(lanes);
}
