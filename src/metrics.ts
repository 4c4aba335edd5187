import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from './db/client.ts';
import { poolOf } from './db/client.ts';

/**
 * Prometheus metrics of this process (API or worker), served at /metrics (src/http/metrics.ts; on the API port by server/app.ts).
 * One registry per process: Prometheus scrapes every process and sums; nothing here is shared
 * between processes, nor needs to be. Labels are bounded sets (route templates, operation names
 * capped by GraphQL's own limits, outcomes), never ids or paths. docs/operating.md "Metrics" lists them all.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from a request arriving to its response finishing, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: SECONDS,
  registers: [registry],
});

export const graphqlFastPathAnswers = new Counter({
  name: 'graphql_fast_path_total',
  help: 'POST /graphql requests answered by the fast path (src/graphql/fast-path.ts) rather than by Yoga, by outcome (ok, error: a result with errors).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const graphqlOperations = new Counter({
  name: 'graphql_operations_total',
  help: 'GraphQL operations executed (on /graphql, /v1 and /live), by operation name, type and outcome (ok, error).',
  labelNames: ['operation', 'type', 'outcome'] as const,
  registers: [registry],
});

export const graphqlOperationDuration = new Histogram({
  name: 'graphql_operation_duration_seconds',
  help: 'Execution time of GraphQL operations, by operation name and type.',
  labelNames: ['operation', 'type'] as const,
  buckets: SECONDS,
  registers: [registry],
});

export const webhookAttempts = new Counter({
  name: 'webhook_attempts_total',
  help: 'Webhook attempts recorded by this worker, by outcome (succeeded, failed, not_sent: refused before sending) and trigger (scheduled, manual).',
  labelNames: ['outcome', 'trigger'] as const,
  registers: [registry],
});

export const webhookAttemptDuration = new Histogram({
  name: 'webhook_attempt_duration_seconds',
  help: "Time from sending a webhook to the receiver's answer (or the timeout), for attempts that were sent.",
  labelNames: ['outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'webhook_deliveries_total',
  help: 'Webhook deliveries settled by this worker, by outcome (succeeded, failed: the schedule ran out or the endpoint went away).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const webhookSlotGiveUps = new Counter({
  name: 'webhook_slot_give_ups_total',
  help:
    'Attempts that stopped waiting for a slot (slots.ts), by reason: stalled (no waiter of the endpoint moved for the patience), ' +
    'slow (its attempts outlast the patience), max (waited the longest allowed). A first attempt is then put back into the outbox.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const holdSweepCancellations = new Counter({
  name: 'hold_sweep_cancelled_orders_total',
  help: 'Pending orders cancelled because their ticket hold ran out (the sweep, or a checkout short of tickets).',
  registers: [registry],
});

export const idempotencyKeys = new Counter({
  name: 'idempotency_keys_total',
  help: 'Requests with an Idempotency-Key, by what became of the key: stored, replayed, given_back (a throttle or fault did nothing), not_kept (a sign-in, or a caller without a namespace), other_request, still_running, interrupted, secret_withheld (409s).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const throttleRefusals = new Counter({
  name: 'throttle_refusals_total',
  help: 'Requests refused by a rate limit or throttle (429), by limit name.',
  labelNames: ['limit'] as const,
  registers: [registry],
});

const pools = new Set<Database>();

new Gauge({
  name: 'db_pool_connections',
  help: 'Connections of the PostgreSQL pool(s) of this process, by state (in_use, idle), and requests waiting for one (waiting).',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    let total = 0;
    let idle = 0;
    let waiting = 0;
    for (const db of pools) {
      const pool = poolOf(db);
      total += pool.totalCount;
      idle += pool.idleCount;
      waiting += pool.waitingCount;
    }
    this.set({ state: 'in_use' }, total - idle);
    this.set({ state: 'idle' }, idle);
    this.set({ state: 'waiting' }, waiting);
  },
});

const backlogSources = new Set<Database>();

new Gauge({
  name: 'webhook_dispatch_backlog',
  help: 'Webhook deliveries recorded but whose workflow has not started yet (pending, not dispatched), across the service.',
  registers: [registry],
  async collect() {
    const [db] = backlogSources;
    if (!db) return;
    // The partial index of the dispatcher's sweep (workflowStartedAt IS NULL) keeps this cheap.
    const [row] = await db.$queryRaw<Array<{ count: bigint }>>`
      SELECT count(*) AS count FROM webhook_deliveries WHERE "workflowStartedAt" IS NULL AND status = 'pending'`;
    this.set(Number(row?.count ?? 0));
  },
});

/** Reports the pool of `db` in db_pool_connections (and, with `backlog`, reads the dispatcher's backlog through it). */
export function observeDatabase(db: Database, options: { backlog?: boolean } = {}): () => void {
  pools.add(db);
  if (options.backlog) backlogSources.add(db);
  return () => {
    pools.delete(db);
    backlogSources.delete(db);
  };
}
