import { Client, Connection } from '@temporalio/client';
import type { Config } from './config.ts';
import { activeTracing } from './tracing.ts';

/**
 * The API's handle on Temporal, connected lazily: the API starts (and serves everything that does
 * not need Temporal) while Temporal is still coming up, and /readyz reports the difference.
 */
export class TemporalAccess {
  #connection: Promise<Connection> | undefined;
  #client: Client | undefined;

  constructor(
    readonly address: string,
    readonly namespace: string,
    readonly taskQueue: string,
  ) {}

  static fromConfig(config: Config): TemporalAccess | undefined {
    if (!config.TEMPORAL_ADDRESS) return undefined;
    return new TemporalAccess(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE, config.TEMPORAL_TASK_QUEUE);
  }

  connection(): Promise<Connection> {
    this.#connection ??= Connection.connect({ address: this.address, connectTimeout: '5s' }).catch((error: unknown) => {
      this.#connection = undefined;
      throw error;
    });
    return this.#connection;
  }

  async client(): Promise<Client> {
    if (!this.#client) {
      const connection = await this.connection();
      // With tracing on, a workflow start carries the caller's trace context (src/tracing.ts); off,
      // the interceptors (and the OpenTelemetry SDK under them) are never loaded.
      const interceptors = activeTracing()
        ? { workflow: [new (await import('@temporalio/interceptors-opentelemetry')).OpenTelemetryWorkflowClientInterceptor()] }
        : {};
      this.#client ??= new Client({ connection, namespace: this.namespace, interceptors });
    }
    return this.#client;
  }

  /** Resolves when the namespace answers within `timeoutMs`; throws otherwise. */
  async check(timeoutMs = 2_000): Promise<void> {
    const connection = await withTimeout(this.connection(), timeoutMs, 'connect to Temporal');
    await withTimeout(
      connection.workflowService.describeNamespace({ namespace: this.namespace }),
      timeoutMs,
      'describe the Temporal namespace',
    );
  }

  async close(): Promise<void> {
    const pending = this.#connection;
    this.#connection = undefined;
    this.#client = undefined;
    if (pending) await (await pending.catch(() => undefined))?.close();
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms trying to ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
