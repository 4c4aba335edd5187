import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/client.ts';
import type { Logger } from '../src/log.ts';
import { attemptBatch, type DeliverBatchInput } from '../src/webhooks/batch.ts';
import { attemptDelivery, type AttemptOptions, type AttemptResult, type DeliveryConfig } from '../src/webhooks/deliver.ts';
import { recoverStep, resendDelivery, type ManualHooks, type RecoverInput } from '../src/webhooks/manual.ts';
import { labelOf, startRetryWorkflow } from '../src/webhooks/starts.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { releaseNext } from '../src/webhooks/deliver.ts';

export interface ActivityDependencies {
  db: Database;
  logger: Logger;
  config: DeliveryConfig & Config;
  /** Decrypts endpoint signing secrets: the same SECRETS_ENCRYPTION_KEY as the API that stored them. */
  encryptionKey: Buffer;
}

/** Activities receive their dependencies from the worker that hosts them. */
export function createActivities(given: ActivityDependencies) {
  // A delivery of an ordered endpoint that settles hands the next one of its object to this
  // worker's dispatcher (src/webhooks/ordering.ts), which starts what is handed to it within
  // WEBHOOK_BATCH_WINDOW as batches, through the worker's Temporal client (the same client for every
  // activity). What it has not started when the worker stops, the sweep claims.
  let client: Client | undefined;
  const starter = new WebhookDispatcher(given.db, { client: () => Promise.resolve(client!) }, given.config, given.logger);
  const deps = {
    ...given,
    release: (deliveryIds: readonly string[]) => {
      client ??= Context.current().client;
      starter.dispatch(deliveryIds);
      return Promise.resolve();
    },
  };
  const { db } = deps;
  const manualHooks = (): ManualHooks => {
    const context = Context.current();
    return { heartbeat: () => context.heartbeat() };
  };
  return {
    /** The first attempt of every delivery of a batch; starts the retry workflows of those that failed. */
    attemptBatch(input: DeliverBatchInput) {
      const context = Context.current();
      const settings = { taskQueue: context.info.taskQueue, scheduleMs: input.scheduleMs, attemptTimeoutMs: input.attemptTimeoutMs };
      return attemptBatch(deps, input, {
        // A local activity (the worker keeps its workflow task alive); a regular one reports here.
        heartbeat: () => context.info.isLocal || context.heartbeat(),
        async startRetry(delivery, delayMs) {
          // A retried batch finds the retry workflow started already, which may have moved on.
          if ((await startRetryWorkflow(context.client, deps.logger, settings, labelOf(delivery), delayMs)) === 'already started') return;
          await db.webhookDelivery.updateMany({
            where: { id: delivery.id, status: 'pending' },
            data: { nextAttemptAt: new Date(Date.now() + delayMs) },
          });
        },
      });
    },

    /** Attempt n of a delivery's schedule: sends it, or answers the outcome recorded for n already. */
    attemptDelivery(deliveryId: string, attemptNumber: number, options: AttemptOptions = {}): Promise<AttemptResult> {
      return attemptDelivery(deps, deliveryId, attemptNumber, options);
    },

    /** One manual attempt of a delivery, or `deferred` when its endpoint has no free slot. */
    resendDelivery(input: { deliveryId: string; attemptId: string }) {
      return resendDelivery(deps, input, manualHooks());
    },

    /** One step of a recovery: a few failed deliveries of an endpoint sent again (src/webhooks/manual.ts). */
    recoverFailedDeliveries(input: RecoverInput) {
      return recoverStep(deps, input, manualHooks());
    },

    /** When the next attempt is due (shown to users); the workflow's timer is what actually waits. */
    async scheduleNextAttempt(deliveryId: string, at: string): Promise<void> {
      await db.webhookDelivery.updateMany({ where: { id: deliveryId, status: 'pending' }, data: { nextAttemptAt: new Date(at) } });
    },

    async markDeliveryFailed(deliveryId: string): Promise<void> {
      const settled = await db.$queryRaw<Array<{ endpointId: string; orderingKey: string | null }>>`
        UPDATE webhook_deliveries SET status = 'failed', "completedAt" = now(), "nextAttemptAt" = NULL, "updatedAt" = now()
         WHERE id = ${deliveryId} AND status = 'pending'
        RETURNING "endpointId", "orderingKey"`;
      for (const delivery of settled) await releaseNext(deps, delivery);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
