import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { loadConfig } from '../src/config.ts';
import { createDatabase, type Database } from '../src/db/client.ts';
import { ENSURE_TEMPORAL_HINT, findTemporalCli, startTemporalDevServer } from '../src/embedded/temporal.ts';
import { createLogger } from '../src/log.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { TemporalAccess } from '../src/temporal.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { views } from '../src/webhooks/payloads.ts';
import { recordWebhookEvent } from '../src/webhooks/record.ts';
import { spawnProcess, type Spawned } from '../test/support/process.ts';
import { createTestEndpoint, startWebhookReceiver, type WebhookReceiver } from '../test/support/webhook-receiver.ts';
import { freshDatabase } from './support.ts';

/**
 * `npm run bench:webhooks`: webhook delivery end to end — PostgreSQL, the Temporal dev server,
 * real worker processes (`npm run worker`), a real HTTP receiver on 127.0.0.1 — with N endpoints
 * in one account and M source events (N x M deliveries), once with one worker process and once
 * with two. Each configuration runs two phases:
 *   - burst: the M events recorded as fast as the "API" (this process) can, each dispatched right
 *     after its transaction commits: deliveries/s from the first dispatch to the last receipt;
 *   - paced: the M events recorded at a steady BENCH_RATE deliveries/s (the target rate): latency
 *     from the source event's createdAt (database clock) to the receiver's receipt, p50 and p99;
 *   - paced-low: the same at BENCH_LOW_RATE (default 50/s), a load the machine keeps up with, for
 *     the latency of the pipeline itself rather than of a queue.
 * Every delivery must arrive exactly once and end succeeded with one attempt.
 * Target: >= 250 deliveries/s and p99 < 1 s with two workers.
 * Needs PostgreSQL (TEST_PG_ADMIN_URL, else the local server scripts/ensure-postgres.sh starts)
 * and the Temporal CLI (.tools/temporal/temporal, from scripts/ensure-temporal.sh).
 */

const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 10);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 200);
/** Offered load of the paced phases, in deliveries per second: the target's, and one the machine sustains. */
const RATE = Number(process.env.BENCH_RATE ?? 250);
const LOW_RATE = Number(process.env.BENCH_LOW_RATE ?? 50);
const WORKER_POOL_SIZE = process.env.BENCH_WORKER_POOL_SIZE ?? '20';
/** Worker process counts to measure, in order. */
const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1,2').split(',').map(Number);
const TARGET = { deliveriesPerSecond: 250, p99Ms: 1_000 };
const ENCRYPTION_KEY = randomBytes(32);

function prepareDatabase(): Promise<string> {
  return freshDatabase('tks_bench_webhooks');
}

type PhaseName = 'burst' | 'paced' | 'paced-low';

interface Phase {
  workers: number;
  phase: PhaseName;
  /** Offered deliveries/s (paced phases). */
  rate?: number;
  deliveries: number;
  seconds: number;
  deliveriesPerSecond: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function runPhase(args: {
  db: Database;
  dispatcher: WebhookDispatcher;
  receiver: WebhookReceiver;
  account: { organisationId: string; accountId: string };
  workers: number;
  phase: PhaseName;
  events?: number;
}): Promise<Phase> {
  const { db, dispatcher, receiver, account } = args;
  const events = args.events ?? EVENTS;
  receiver.requests.length = 0;
  const expected = events * ENDPOINTS;
  const eventIds: string[] = [];
  let firstDispatch = 0;
  const record = async (i: number) => {
    const { eventId, deliveryIds } = await db.$transaction((tx) =>
      recordWebhookEvent(tx, {
        ...account,
        type: 'event.created',
        payload: views.event({
          id: `evt_bench${String(i).padStart(17, '0')}`,
          name: `Bench event ${i}`,
          status: 'draft',
          accountId: account.accountId,
          venueId: null,
          timezone: 'UTC',
          createdAt: new Date(),
        }),
      }),
    );
    eventIds.push(eventId);
    firstDispatch ||= performance.timeOrigin + performance.now();
    dispatcher.dispatch(deliveryIds);
  };

  const arrived = receiver.waitForRequests(expected, () => true, 300_000);
  if (args.phase === 'burst') {
    // As fast as a busy API records them: a few transactions at a time.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < events) await record(next++);
      }),
    );
  } else {
    const rate = args.phase === 'paced' ? RATE : LOW_RATE;
    const intervalMs = (1000 * ENDPOINTS) / rate;
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < events; i += 1) {
      const due = started + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(record(i));
    }
    await Promise.all(pending);
  }
  const requests = await arrived;
  const last = Math.max(...requests.map((r) => r.receivedAt));
  const seconds = (last - firstDispatch) / 1000;

  // Every delivery exactly once, and settled as succeeded with one attempt.
  const byDelivery = new Map<string, number>();
  for (const r of requests) byDelivery.set(String(r.headers['service-delivery-id']), r.receivedAt);
  if (byDelivery.size !== expected || requests.length !== expected) {
    throw new Error(`expected ${expected} distinct deliveries once each, got ${requests.length} requests for ${byDelivery.size}`);
  }
  if (requests.some((r) => !r.verified)) throw new Error('a delivery failed signature verification');
  await waitForSettled(db, eventIds, expected);

  const deliveries = await db.webhookDelivery.findMany({
    where: { eventId: { in: eventIds } },
    select: { id: true, event: { select: { createdAt: true } } },
  });
  const latencies = deliveries.map((d) => byDelivery.get(d.id)! - d.event.createdAt.getTime()).sort((a, b) => a - b);
  return {
    workers: args.workers,
    phase: args.phase,
    ...(args.phase === 'burst' ? {} : { rate: args.phase === 'paced' ? RATE : LOW_RATE }),
    deliveries: expected,
    seconds,
    deliveriesPerSecond: expected / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

async function waitForSettled(db: Database, eventIds: string[], expected: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const succeeded = await db.webhookDelivery.count({ where: { eventId: { in: eventIds }, status: 'succeeded', attemptCount: 1 } });
    if (succeeded === expected) return;
    if (Date.now() > deadline) throw new Error(`only ${succeeded} of ${expected} deliveries settled as succeeded with one attempt`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** BENCH_TEMPORAL_ADDRESS: a Temporal server started elsewhere (a cluster, a tuned dev server); else the embedded dev server. */
async function startTemporal(): Promise<{ address: string; stop(): Promise<void> }> {
  if (process.env.BENCH_TEMPORAL_ADDRESS) return { address: process.env.BENCH_TEMPORAL_ADDRESS, stop: async () => {} };
  const cliPath = await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH });
  if (!cliPath) throw new Error(`No temporal CLI: ${ENSURE_TEMPORAL_HINT}`);
  return startTemporalDevServer({ cliPath, uiPort: false });
}

async function main() {
  console.log(`preparing: PostgreSQL database, Temporal dev server, receiver with ${ENDPOINTS} endpoints ...`);
  const [url, temporal, receiver] = await Promise.all([prepareDatabase(), startTemporal(), startWebhookReceiver()]);
  const db = createDatabase({ url, poolSize: 10 });
  const workers: Spawned[] = [];
  const results: Phase[] = [];
  try {
    const org = await bootstrapOrganisation(db, { orgSlug: 'bench', orgName: 'Bench', email: 'bench@bench.test', password: 'bench password' });
    const account = { organisationId: org.organisation.id, accountId: org.account.id };
    for (let i = 0; i < ENDPOINTS; i += 1) await createTestEndpoint(db, ENCRYPTION_KEY, { ...account, receiver });

    for (const count of WORKER_COUNTS) {
      const taskQueue = `bench-webhooks-${count}-${randomBytes(3).toString('hex')}`;
      const env = {
        DATABASE_URL: url,
        DATABASE_POOL_SIZE: WORKER_POOL_SIZE,
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('base64'),
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        LOG_LEVEL: 'info',
      };
      const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
      const access = TemporalAccess.fromConfig(config)!;
      const dispatcher = new WebhookDispatcher(db, access, config, createLogger('warn'));
      const started = Array.from({ length: count }, () => spawnProcess(['workflows/worker-main.ts'], { ...env, NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS }));
      workers.push(...started);
      await Promise.all(started.map((w) => w.waitFor(/worker running/, 120_000)));
      try {
        // Warm-up: worker caches, connections, the workflow sandbox.
        await runPhase({ db, dispatcher, receiver, account, workers: count, phase: 'burst', events: Math.ceil(EVENTS / 4) }).catch((error: unknown) => {
          throw new Error(`warm-up failed: ${error}`);
        });
        for (const phase of ['burst', 'paced', 'paced-low'] as const) {
          const result = await runPhase({ db, dispatcher, receiver, account, workers: count, phase });
          results.push(result);
          console.log(
            `${count} worker(s), ${phase}${result.rate ? ` at ${result.rate}/s` : ''}: ${result.deliveries} deliveries in ${result.seconds.toFixed(2)} s = ${result.deliveriesPerSecond.toFixed(0)}/s, ` +
              `p50 ${result.p50} ms, p99 ${result.p99} ms`,
          );
        }
      } finally {
        await dispatcher.stop();
        await access.close();
        await Promise.all(started.map((w) => w.stop('SIGTERM')));
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    await db.$disconnect();
    await receiver.close();
    await temporal.stop();
  }

  console.log(
    `\n${ENDPOINTS} endpoints x ${EVENTS} events = ${ENDPOINTS * EVENTS} deliveries per phase; ${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}; ` +
      `worker DATABASE_POOL_SIZE ${WORKER_POOL_SIZE}\n`,
  );
  console.log('| workers | phase | offered/s | deliveries/s (first dispatch to last receipt) | p50 ms | p99 ms | target (two workers) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of results) {
    let target = '—';
    if (r.workers === 2 && r.phase === 'burst') {
      target = `>= ${TARGET.deliveriesPerSecond}/s: ${r.deliveriesPerSecond >= TARGET.deliveriesPerSecond ? 'met' : 'NOT met'}`;
    } else if (r.workers === 2 && r.phase === 'paced') {
      target = `p99 < ${TARGET.p99Ms} ms at ${RATE}/s: ${r.p99 < TARGET.p99Ms && r.deliveriesPerSecond >= 0.95 * RATE ? 'met' : 'NOT met'}`;
    }
    console.log(`| ${r.workers} | ${r.phase} | ${r.rate ?? 'all at once'} | ${r.deliveriesPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${target} |`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
