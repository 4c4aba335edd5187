import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/client.ts';
import type { Logger } from '../src/log.ts';
import { attemptDelivery, type AttemptOptions, type AttemptResult } from '../src/webhooks/deliver.ts';

export interface ActivityDependencies {
  db: Database;
  logger: Logger;
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'WEBHOOK_ATTEMPT_TIMEOUT'>;
  /** Decrypts endpoint signing secrets: the same SECRETS_ENCRYPTION_KEY as the API that stored them. */
  encryptionKey: Buffer;
}

/** Activities receive their dependencies from the worker that hosts them. */
export function createActivities(deps: ActivityDependencies) {
  const { db } = deps;
  return {
    async ping(_name: string): Promise<{ database: string }> {
      const [row] = await db.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
      return { database: row ? 'ok' : 'no answer' };
    },

    /** Attempt n of a delivery: sends it, or answers the outcome recorded for n already. */
    attemptDelivery(deliveryId: string, attemptNumber: number, options: AttemptOptions = {}): Promise<AttemptResult> {
      return attemptDelivery(deps, deliveryId, attemptNumber, options);
    },

    /** When the next attempt is due (shown to users); the workflow's timer is what actually waits. */
    async scheduleNextAttempt(deliveryId: string, at: string): Promise<void> {
      await db.webhookDelivery.updateMany({ where: { id: deliveryId, status: 'pending' }, data: { nextAttemptAt: new Date(at) } });
    },

    async markDeliveryFailed(deliveryId: string): Promise<void> {
      await db.webhookDelivery.updateMany({
        where: { id: deliveryId, status: 'pending' },
        data: { status: 'failed', completedAt: new Date(), nextAttemptAt: null },
      });
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
