import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { loadConfig } from '../src/config.ts';
import { REPO_ROOT } from '../src/db/migrate.ts';
import { createDatabase, type Database } from '../src/db/client.ts';
import { EMBEDDED_WEBHOOK_BATCH_SIZE, ENSURE_TEMPORAL_HINT, findTemporalCli, startTemporalDevServer } from '../src/embedded/temporal.ts';
import { createLogger } from '../src/log.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { TemporalAccess } from '../src/temporal.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { views } from '../src/webhooks/payloads.ts';
import { recordWebhookEvent } from '../src/webhooks/record.ts';
import { spawnProcess, type Spawned } from '../test/support/process.ts';
import { createTestEndpoint, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../test/support/webhook-receiver.ts';
import { freshDatabase, grewAcrossRounds, startNpmStart } from './support.ts';

/**
 * `npm run bench:webhooks`: webhook delivery end to end — PostgreSQL, the embedded Temporal dev
 * server, real worker processes (`npm run worker`), a real HTTP receiver on 127.0.0.1 that verifies
 * every signature with Stripe's library — with N endpoints in one account and M source events per
 * phase (N x M deliveries). This process plays the API: it records each event in a transaction and
 * dispatches its deliveries after the commit, as the services do. Phases:
 *   - burst: the M events recorded as fast as 8 concurrent "requests" can: deliveries/s from the
 *     first dispatch to the last receipt;
 *   - paced: the M events recorded at a steady BENCH_RATE deliveries/s: latency from the source
 *     event's createdAt (database clock) to the receiver's receipt, p50 and p99;
 *   - tarpit: paced again, with one of the N endpoints answering only after BENCH_TARPIT_MS (10 s):
 *     the latency of the other endpoints' deliveries, and the tarpit's drain (its attempts in flight
 *     are bounded by WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, so its backlog waits in the outbox).
 * In every phase every delivery must arrive exactly once and settle as succeeded with one attempt.
 * BENCH_ORDERING=per_object runs the same phases with every endpoint ordering per object and the
 * events announcing objects BENCH_EVENTS_PER_OBJECT (4) at a time, one after another (an order's
 * life): an object's next delivery to an endpoint waits for the one before it, and each phase checks
 * that every endpoint received each object's events in sequence order. Targets then: paced
 * p99 < 1 s at 250/s, and a burst at least half the unordered one (run both, in one window).
 * The phases run BENCH_ROUNDS times (3) in the same workers; each worker's RSS is read from /proc after each round.
 * BENCH_PHASES (e.g. `paced`) runs only some of them; BENCH_CPU=1 prints each phase's CPU by process kind;
 * BENCH_TIMELINE=1 prints when the phase's events were all recorded and its receipts per 100 ms (a tail shows);
 * BENCH_WORKER_NODE_ARGS adds node flags to the workers (e.g. --cpu-prof --cpu-prof-dir=DIR).
 * Batches of first attempts are as large as docker compose and npm start make them (WEBHOOK_BATCH_SIZE
 * 256, which their Temporal's search attribute limit allows; 64, the default, with BENCH_TEMPORAL_ADDRESS);
 * WEBHOOK_* variables set for the benchmark apply to the workers and to this process's dispatcher.
 * Targets: burst >= 1,000/s; paced p99 < 500 ms at 250/s; tarpit: the other endpoints' p99
 * < 500 ms (ordered runs: both < 1 s); exactly once; worker RSS after the run < 250 MB, not
 * growing from round to round.
 * WEBHOOKS_NPM_START=1 runs the same phases against `npm start` as it ships instead, in a new DATA_DIR:
 * its embedded PostgreSQL, the Temporal dev server, and its one worker through tsx (it needs the ports
 * `npm start` takes: 5433, 7233, 8233). The same targets apply.
 * Needs PostgreSQL (TEST_PG_ADMIN_URL, else the local server scripts/ensure-postgres.sh starts)
 * and the Temporal CLI (.tools/temporal/temporal, from scripts/ensure-temporal.sh).
 */

const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 10);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 200);
/** Offered load of the paced phases, in deliveries per second. */
const RATE = Number(process.env.BENCH_RATE ?? 250);
const TARPIT_MS = Number(process.env.BENCH_TARPIT_MS ?? 10_000);
const WORKER_POOL_SIZE = process.env.BENCH_WORKER_POOL_SIZE ?? '20';
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
/** The phases run this many times in the same workers: memory that grows from round to round is a leak. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_PHASES=paced (comma-separated) runs only those phases, e.g. to profile one. */
const PHASES = (process.env.BENCH_PHASES ?? 'burst,paced,tarpit')
  .split(',')
  .filter((phase): phase is PhaseName => ['burst', 'paced', 'tarpit'].includes(phase));
const ORDERING = process.env.BENCH_ORDERING === 'per_object' ? 'per_object' : 'none';
const TARGET = { burstPerSecond: 1_000, p99Ms: ORDERING === 'none' ? 500 : 1_000, workerRssMb: 250 };
/** Events per object, consecutive (ordered runs only: unordered ones announce an object each). */
const EVENTS_PER_OBJECT = ORDERING === 'per_object' ? Number(process.env.BENCH_EVENTS_PER_OBJECT ?? 4) : 1;
const ENCRYPTION_KEY = randomBytes(32);
const NPM_START = process.env.WEBHOOKS_NPM_START === '1';

type PhaseName = 'burst' | 'paced' | 'tarpit';

interface Phase {
  phase: PhaseName;
  /** Offered deliveries/s (paced phases). */
  rate?: number;
  deliveries: number;
  seconds: number;
  deliveriesPerSecond: number;
  /** Latency of the deliveries to the healthy endpoints (all of them but in the tarpit phase). */
  p50: number;
  p99: number;
  exactlyOnce: boolean;
  /** Ordered runs: every endpoint received each object's events in sequence order (by time of receipt). */
  inSequence?: boolean;
  /** Batch workflows that made the phase's first attempts (each delivery counted in its last). */
  batches: number;
  /** Deliveries put back into the outbox at least once for want of a slot. */
  putBack: number;
  /** Tarpit phase: seconds from the first dispatch until the tarpit's last delivery arrived. */
  tarpitDrainSeconds?: number;
  /** Ordered runs: p50/p99 of an object's first, second, ... event (what each hop of the chain adds). */
  byPosition?: Array<{ p50: number; p99: number }>;
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
  phase: PhaseName;
  tarpitPath?: string;
  events?: number;
}): Promise<Phase> {
  const { db, dispatcher, receiver, account } = args;
  const events = args.events ?? EVENTS;
  receiver.reset();
  const expected = events * ENDPOINTS;
  const eventIds: string[] = [];
  /** Each event's place among its object's events (0 = the first). */
  const positions = new Map<string, number>();
  let firstDispatch = 0;
  // Objects of this phase only: their sequences start at 1.
  const run = randomBytes(3).toString('hex');
  const record = async (i: number) => {
    const { eventId, deliveryIds } = await db.$transaction(
      (tx) =>
        recordWebhookEvent(tx, {
          ...account,
          type: 'event.created',
          payload: views.event({
            id: `evt_bench${run}${String(Math.floor(i / EVENTS_PER_OBJECT)).padStart(11, '0')}`,
            name: `Bench event ${i}`,
            status: 'draft',
            accountId: account.accountId,
            venueId: null,
            timezone: 'UTC',
            createdAt: new Date(),
          }),
        }),
      // A paced phase the machine cannot keep up with queues its transactions; they wait rather than fail.
      { maxWait: 60_000 },
    );
    eventIds.push(eventId);
    positions.set(eventId, i % EVENTS_PER_OBJECT);
    firstDispatch ||= performance.timeOrigin + performance.now();
    dispatcher.dispatch(deliveryIds);
  };

  const healthy = (r: ReceivedRequest) => r.path !== args.tarpitPath;
  const arrived = receiver.waitForRequests(args.tarpitPath ? expected - events : expected, healthy, 300_000);
  if (args.phase === 'burst') {
    // As fast as a busy API records them: a few transactions at a time.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < events) await record(next++);
      }),
    );
  } else {
    const intervalMs = (1000 * ENDPOINTS) / RATE;
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
  const recordedAt = performance.timeOrigin + performance.now();
  const requests = await arrived;
  if (process.env.BENCH_TIMELINE) {
    const buckets: number[] = [];
    for (const r of requests) {
      const bucket = Math.floor((r.receivedAt - firstDispatch) / 100);
      buckets[bucket] = (buckets[bucket] ?? 0) + 1;
    }
    const recorded = ((recordedAt - firstDispatch) / 1000).toFixed(2);
    console.log(
      `  ${args.phase}: recorded ${recorded} s after the first dispatch; receipts per 100 ms: ${Array.from(buckets, (n) => n ?? 0).join(' ')}`,
    );
  }
  const last = Math.max(...requests.map((r) => r.receivedAt));
  const seconds = (last - firstDispatch) / 1000;
  let tarpitDrainSeconds: number | undefined;
  if (args.tarpitPath) {
    const tarpit = await receiver.waitForRequests(events, (r) => r.path === args.tarpitPath && r.status === 200, 900_000);
    tarpitDrainSeconds = (Math.max(...tarpit.map((r) => r.receivedAt)) - firstDispatch) / 1000;
  }

  // Every delivery exactly once, settled as succeeded with one attempt.
  const all = receiver.requests;
  const byDelivery = new Map<string, number>();
  for (const r of all) byDelivery.set(String(r.headers['service-delivery-id']), r.receivedAt);
  const exactlyOnce = byDelivery.size === expected && all.length === expected && all.every((r) => r.verified);
  if (!exactlyOnce)
    console.error(`  ${args.phase}: expected ${expected} verified deliveries once each, got ${all.length} requests for ${byDelivery.size}`);
  await waitForSettled(db, eventIds, expected);
  const inSequence = ORDERING === 'per_object' ? receivedInSequence(all) : undefined;
  if (inSequence === false) console.error(`  ${args.phase}: an endpoint received an object's events out of sequence order`);

  const deliveries = await db.webhookDelivery.findMany({
    where: { eventId: { in: eventIds }, ...(args.tarpitPath ? { endpoint: { url: { not: { endsWith: args.tarpitPath } } } } : {}) },
    select: { id: true, eventId: true, event: { select: { createdAt: true } } },
  });
  const latencyOf = (d: (typeof deliveries)[number]) => byDelivery.get(d.id)! - d.event.createdAt.getTime();
  const latencies = deliveries.map(latencyOf).sort((a, b) => a - b);
  const byPosition = Array.from({ length: EVENTS_PER_OBJECT }, (_, position) => {
    const at = deliveries
      .filter((d) => positions.get(d.eventId) === position)
      .map(latencyOf)
      .sort((a, b) => a - b);
    return { p50: percentile(at, 50), p99: percentile(at, 99) };
  });
  const [shape] = await db.$queryRaw<Array<{ batches: number; putBack: number }>>`
    SELECT count(DISTINCT "batchId")::int AS batches, count("availableAt")::int AS "putBack"
      FROM webhook_deliveries WHERE "eventId" = ANY(${eventIds}::text[])`;
  return {
    phase: args.phase,
    ...(args.phase === 'burst' ? {} : { rate: RATE }),
    deliveries: requests.length,
    seconds,
    deliveriesPerSecond: requests.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    exactlyOnce,
    ...(inSequence !== undefined ? { inSequence } : {}),
    batches: shape!.batches,
    putBack: shape!.putBack,
    ...(tarpitDrainSeconds !== undefined ? { tarpitDrainSeconds } : {}),
    ...(EVENTS_PER_OBJECT > 1 ? { byPosition } : {}),
  };
}

/** Each endpoint (path) received each object's events (data.id) with rising sequence numbers, in order of receipt. */
function receivedInSequence(requests: readonly ReceivedRequest[]): boolean {
  const last = new Map<string, number>();
  for (const r of [...requests].sort((a, b) => a.receivedAt - b.receivedAt)) {
    const { data } = JSON.parse(r.rawBody) as { data: { id: string; sequence: number } };
    const key = `${r.path} ${data.id}`;
    if ((last.get(key) ?? 0) >= data.sequence) return false;
    last.set(key, data.sequence);
  }
  return true;
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

/**
 * CPU seconds used so far by each kind of process on the machine (/proc/<pid>/stat: utime + stime of
 * the live processes), for where a phase's time went: the Temporal server, PostgreSQL, the workers,
 * this process (recording events, dispatching, receiving) and everything else.
 */
function cpuByKind(workerPids: readonly number[]): Record<string, number> {
  const ticks = 100;
  const totals: Record<string, number> = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticks;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const pid = Number(entry);
      const kind = workerPids.includes(pid)
        ? 'workers'
        : pid === process.pid
          ? 'bench (API + receiver)'
          : cmdline.includes('start-dev')
            ? 'temporal'
            : cmdline.startsWith('postgres') || cmdline.includes('native/bin/postgres')
              ? 'postgres'
              : cmdline.includes('scripts/start.ts')
                ? 'npm start launcher (and PGlite, when it runs)'
                : cmdline.includes('server/main.ts')
                  ? 'api (npm start)'
                  : 'other';
      totals[kind] = (totals[kind] ?? 0) + seconds;
    } catch {
      // gone meanwhile
    }
  }
  return totals;
}

/** Resident memory of a process from /proc, in MB: now (VmRSS) and at its peak (VmHWM). */
function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/** Processes running this script or entry point (their command line names it), for `npm start`'s worker. */
function pidsRunning(entry: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(entry)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The database and Temporal: this benchmark's own, or those `npm start` started (WEBHOOKS_NPM_START). */
async function startBackends(
  taskQueue: string,
): Promise<{ url: string; pglite?: boolean; temporal: { address: string; stop(): Promise<void> } }> {
  if (NPM_START) {
    console.log(
      `preparing: npm start (embedded PostgreSQL, Temporal dev server, one worker) in a new DATA_DIR, receiver with ${ENDPOINTS} endpoints ...`,
    );
    const service = await startNpmStart('webhooks', {
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      TEMPORAL_TASK_QUEUE: taskQueue,
    });
    return { url: service.databaseUrl, pglite: service.pglite, temporal: { address: '127.0.0.1:7233', stop: () => service.stop() } };
  }
  console.log(`preparing: PostgreSQL database, Temporal dev server, receiver with ${ENDPOINTS} endpoints ...`);
  // Named after this checkout, so two checkouts' benchmarks never share (and drop) one database.
  const name = `tks_bench_webhooks_${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 8)}`;
  const [url, temporal] = await Promise.all([freshDatabase(name), startTemporal()]);
  return { url, temporal };
}

async function main() {
  const taskQueue = `bench-webhooks-${randomBytes(3).toString('hex')}`;
  const [{ url, pglite, temporal }, receiver] = await Promise.all([startBackends(taskQueue), startWebhookReceiver()]);
  // PGlite's connections share one session: no named statements there (as npm start's own processes).
  const db = createDatabase(pglite ? { url, poolSize: 2, preparedStatements: false } : { url, poolSize: 20 });
  // Workers as in production: node on the build (npm run build, which also bundles the workflows), not one
  // bundled at start, whose build leaves garbage in the heap the RSS figures would count.
  const env = {
    NODE_ENV: 'production',
    // Production refuses to start without SMTP or this; the benchmark sends no mail.
    MAIL_OUTBOX_ALLOWED: 'true',
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'bench', secret: randomBytes(32).toString('hex') }]),
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: WORKER_POOL_SIZE,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('base64'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: 'info',
    // As docker compose and npm start run it, with a Temporal of their own that takes such batches.
    ...(process.env.BENCH_TEMPORAL_ADDRESS && !NPM_START ? {} : { WEBHOOK_BATCH_SIZE: String(EMBEDDED_WEBHOOK_BATCH_SIZE) }),
    // WEBHOOK_* settings of the benchmark's environment apply to the workers and the recording process.
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('WEBHOOK_'))),
  };
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
  const access = TemporalAccess.fromConfig(config)!;
  const dispatcher = new WebhookDispatcher(db, access, config, createLogger('warn'));
  const workers: Spawned[] = [];
  const results: Array<Phase & { round: number }> = [];
  const memory: Array<{ pid: number; round: number; rssMb: number; peakMb: number }> = [];
  try {
    const org = await bootstrapOrganisation(db, {
      orgSlug: 'bench',
      orgName: 'Bench',
      email: 'bench@bench.test',
      password: 'bench password',
    });
    const account = { organisationId: org.organisation.id, accountId: org.account.id };
    const endpoints = [];
    for (let i = 0; i < ENDPOINTS; i += 1) endpoints.push(await createTestEndpoint(db, ENCRYPTION_KEY, { ...account, receiver }));
    await db.webhookEndpoint.updateMany({ where: { id: { in: endpoints.map((e) => e.id) } }, data: { ordering: ORDERING } });

    workers.push(
      ...Array.from({ length: NPM_START ? 0 : WORKERS }, () =>
        // As production runs it (Dockerfile): node on the build, the pre-built workflow bundle.
        spawnProcess(
          [...(process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean), 'dist/workflows/worker-main.js'],
          { ...env, NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS },
          { command: process.execPath },
        ),
      ),
    );
    // The workers' own pids, as they log them.
    const pids = NPM_START
      ? pidsRunning('workflows/worker-main.ts')
      : await Promise.all(workers.map(async (w) => Number((await w.waitFor(/"pid":(\d+)[^\n]*worker running/, 120_000))[1])));

    if (process.env.BENCH_CPU) {
      // What the system costs doing nothing (pollers, sweeps), to tell it apart from the phases' cost.
      const before = cpuByKind(pids);
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      const after = cpuByKind(pids);
      console.log(
        `  CPU idle for 10 s: ${Object.entries(after)
          .map(([kind, seconds]) => `${kind} ${(seconds - (before[kind] ?? 0)).toFixed(1)} s`)
          .join(', ')}`,
      );
    }
    // Warm-up: worker caches, connections, the workflow sandbox.
    await runPhase({ db, dispatcher, receiver, account, phase: 'burst', events: Math.ceil(EVENTS / 4) }).catch((error: unknown) => {
      throw new Error(`warm-up failed: ${String(error)}`);
    });
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const phase of PHASES) {
        const tarpitPath = phase === 'tarpit' ? endpoints[0]!.path : undefined;
        if (tarpitPath) receiver.pathBehaviours.set(tarpitPath, { sleepMs: TARPIT_MS });
        const cpuBefore = cpuByKind(pids);
        const logsBefore = workers.map((w) => w.output().length);
        const result = { ...(await runPhase({ db, dispatcher, receiver, account, phase, ...(tarpitPath ? { tarpitPath } : {}) })), round };
        const cpuAfter = cpuByKind(pids);
        if (process.env.BENCH_CPU) {
          const used = Object.entries(cpuAfter).map(([kind, seconds]) => `${kind} ${(seconds - (cpuBefore[kind] ?? 0)).toFixed(1)} s`);
          console.log(`  CPU during ${phase}: ${used.join(', ')}`);
        }
        receiver.pathBehaviours.clear();
        results.push(result);
        console.log(
          `round ${round}, ${phase}${result.rate ? ` at ${result.rate}/s` : ''}: ${result.deliveries} deliveries${tarpitPath ? ' to the healthy endpoints' : ''} in ${result.seconds.toFixed(2)} s = ` +
            `${result.deliveriesPerSecond.toFixed(0)}/s, p50 ${result.p50} ms, p99 ${result.p99} ms; ${result.batches} batches, ${result.putBack} put back` +
            (result.tarpitDrainSeconds !== undefined
              ? `; the tarpit's ${EVENTS} arrived within ${result.tarpitDrainSeconds.toFixed(1)} s`
              : ''),
        );
        if (result.byPosition) {
          const hops = result.byPosition.map((p, i) => `#${i + 1} ${p.p50}/${p.p99}`).join(', ');
          console.log(`  p50/p99 ms by the event's place in its object: ${hops}`);
        }
        const reasons = putBackReasons(workers.map((w, i) => w.output().slice(logsBefore[i])));
        if (reasons) console.log(`  put back, by why the slot wait gave up: ${reasons}`);
      }
      for (const pid of pids) memory.push({ pid, round, ...memoryOf(pid) });
      console.log(
        `  worker RSS after round ${round}: ${memory
          .filter((m) => m.round === round)
          .map((m) => `${m.rssMb.toFixed(0)} MB`)
          .join(', ')}`,
      );
    }
  } finally {
    await dispatcher.stop();
    await access.close();
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    await db.$disconnect();
    await receiver.close();
    await temporal.stop();
  }

  console.log(
    `\n${ENDPOINTS} endpoints x ${EVENTS} events = ${ENDPOINTS * EVENTS} deliveries per phase, ordering ${ORDERING}` +
      `${ORDERING === 'none' ? '' : ` (${EVENTS_PER_OBJECT} events per object)`}, ` +
      `${NPM_START ? 'npm start as it ships (its embedded PostgreSQL, the Temporal dev server, one worker through tsx)' : `${WORKERS} worker processes`}; node ${process.version}; ${cpus().length} CPUs, ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; worker DATABASE_POOL_SIZE ${NPM_START ? 'as npm start sets it' : WORKER_POOL_SIZE}; ` +
      `WEBHOOK_BATCH_SIZE ${config.WEBHOOK_BATCH_SIZE}\n`,
  );
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log('| round | phase | offered/s | deliveries/s (first dispatch to last receipt) | p50 ms | p99 ms | exactly once | target |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const target =
      r.phase === 'burst'
        ? burstTarget(r.deliveriesPerSecond, met)
        : r.phase === 'paced'
          ? `p99 < ${TARGET.p99Ms} ms at ${RATE}/s: ${met(r.p99 < TARGET.p99Ms && r.deliveriesPerSecond >= 0.95 * RATE)}`
          : `other endpoints' p99 < ${TARGET.p99Ms} ms at ${RATE}/s with a ${TARPIT_MS / 1000} s tarpit: ${met(r.p99 < TARGET.p99Ms)} (tarpit drained in ${r.tarpitDrainSeconds!.toFixed(0)} s)`;
    console.log(
      `| ${r.round} | ${r.phase} | ${r.rate ?? 'all at once'} | ${r.deliveriesPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.exactlyOnce ? 'yes' : 'NO'}${r.inSequence === undefined ? '' : r.inSequence ? ', in sequence' : ', OUT OF SEQUENCE'} | ${target} |`,
    );
  }
  // RSS after the run < 250 MB, and no growth from round to round (a leak would show as a
  // climb; 10% is allowed for the allocator's noise). Peak RSS is shown, not a target.
  console.log(
    `\n| worker pid | RSS after each round MB | peak RSS MB | target: < ${TARGET.workerRssMb} MB after the run, no growth across rounds |`,
  );
  console.log('|---|---|---|---|');
  for (const pid of new Set(memory.map((m) => m.pid))) {
    const rounds = memory.filter((m) => m.pid === pid);
    const [first, last] = [rounds[0]!, rounds.at(-1)!];
    const grew = grewAcrossRounds(first.rssMb, last.rssMb);
    console.log(
      `| ${pid} | ${rounds.map((m) => m.rssMb.toFixed(0)).join(' / ')} | ${last.peakMb.toFixed(0)} | ` +
        `${met(last.rssMb < TARGET.workerRssMb)}${rounds.length > 1 ? `; growth ${met(!grew)} (${(last.rssMb - first.rssMb).toFixed(0)} MB)` : ''} |`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * An unordered burst's target is a rate; an ordered one's is half the unordered burst of the same
 * machine and window, given as BENCH_UNORDERED_BURST (deliveries/s of an unordered run just before).
 */
function burstTarget(perSecond: number, met: (ok: boolean) => string): string {
  if (ORDERING === 'none') return `>= ${TARGET.burstPerSecond}/s: ${met(perSecond >= TARGET.burstPerSecond)}`;
  const unordered = Number(process.env.BENCH_UNORDERED_BURST);
  if (!unordered) return '>= 50% of an unordered run’s burst (set BENCH_UNORDERED_BURST to compare)';
  return `>= 50% of the unordered ${unordered.toFixed(0)}/s: ${met(perSecond >= unordered / 2)} (${((100 * perSecond) / unordered).toFixed(0)}%)`;
}

/** The workers' put-back log lines (batch.ts) summed by reason, or '' when nothing was put back. */
function putBackReasons(logs: readonly string[]): string {
  const sums: Record<string, number> = {};
  for (const log of logs) {
    for (const line of log.split('\n')) {
      if (!line.includes('put back into the outbox')) continue;
      try {
        const { reasons } = JSON.parse(line) as { reasons?: Record<string, number> };
        for (const [reason, n] of Object.entries(reasons ?? {})) sums[reason] = (sums[reason] ?? 0) + n;
      } catch {
        // not a JSON log line
      }
    }
  }
  return Object.entries(sums)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
}
