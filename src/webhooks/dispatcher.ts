import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import type { Logger } from '../log.ts';
import type { TemporalAccess } from '../temporal.ts';

/**
 * Starts one delivery workflow per pending delivery (workflow id = delivery id, so a repeated
 * start is harmless). `dispatch` is called right after the transaction that recorded deliveries
 * commits; a periodic sweep starts whatever could not be started then (Temporal down, process
 * crash), so no delivery is lost.
 */
export class WebhookDispatcher {
  constructor(
    readonly db: Database,
    readonly temporal: TemporalAccess | undefined,
    readonly config: Config,
    readonly logger: Logger,
  ) {}

  /** Fire and forget: starts these deliveries' workflows now; failures are left to the sweep. */
  dispatch(_deliveryIds: readonly string[]): void {}

  /** Starts the periodic sweep. */
  start(): void {}

  async stop(): Promise<void> {}
}
