import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { webhookSlotGiveUps } from '../metrics.ts';

/**
 * Fairness between tenants, and protection of receivers: an attempt is only sent while it holds a
 * slot, and slots are bounded per endpoint (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT) and per
 * organisation (WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION) across every worker process. A slot is a
 * row of webhook_leases, granted by the webhook_acquire_leases function (migration
 * 20261123100000_webhook_batches) and deleted by the statement that records the attempt. So a slow
 * or dead receiver holds at most its endpoint's slots, its owner at most the organisation's, and
 * everyone else's attempts go on.
 *
 * The bound is exact while workers live. A worker that dies leaves its slots held until they
 * expire (the attempt timeout plus LEASE_MARGIN_MS), which can only lower throughput for that
 * endpoint meanwhile, never exceed the bound; a retried attempt takes over its own lease.
 *
 * The same function reads the endpoint's circuit breaker (state in webhook_endpoints, written by
 * the recording statement, deliver.ts): 'open' while the endpoint cools down after
 * WEBHOOK_BREAKER_THRESHOLD consecutive failures, then one attempt at a time until one succeeds.
 */

export type SlotOutcome = 'granted' | 'busy' | 'open';
/** Why a waiter stopped waiting (see waitForSlots). */
export type GiveUpReason = 'stalled' | 'slow' | 'max';

export type SlotLimits = Pick<
  Config,
  'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT' | 'WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION' | 'WEBHOOK_BREAKER_THRESHOLD' | 'WEBHOOK_ATTEMPT_TIMEOUT'
>;

/** Beyond the attempt timeout: the record after the answer, and clock skew between workers and PostgreSQL. */
const LEASE_MARGIN_MS = 30_000;

/** The slot of one attempt: a scheduled one by its place in the schedule, a manual one by its id. */
export function leaseId(deliveryId: string, attempt: number | string): string {
  return `${deliveryId}:${attempt}`;
}

/**
 * Asks for slots for these attempts, in priority order, in one round trip. An attempt the answer
 * lacks (its delivery vanished) counts as busy.
 */
export async function acquireSlots(
  db: Database,
  limits: SlotLimits,
  requests: ReadonlyArray<{ leaseId: string; deliveryId: string }>,
): Promise<Map<string, SlotOutcome>> {
  const outcomes = new Map<string, SlotOutcome>();
  if (requests.length === 0) return outcomes;
  const rows = await db.$queryRaw<Array<{ out_lease_id: string; out_outcome: SlotOutcome }>>`
    SELECT out_lease_id, out_outcome FROM webhook_acquire_leases(
      ${requests.map((r) => r.leaseId)}::text[], ${requests.map((r) => r.deliveryId)}::text[],
      ${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT}::int, ${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION}::int,
      ${limits.WEBHOOK_BREAKER_THRESHOLD}::int, ${limits.WEBHOOK_ATTEMPT_TIMEOUT + LEASE_MARGIN_MS}::int)`;
  for (const request of requests) outcomes.set(request.leaseId, 'busy');
  for (const row of rows) outcomes.set(row.out_lease_id, row.out_outcome);
  return outcomes;
}

/** Gives a slot back without recording an attempt (the attempt was not made after all). */
export async function releaseSlots(db: Database, leaseIds: readonly string[]): Promise<void> {
  if (leaseIds.length === 0) return;
  await db.$executeRaw`DELETE FROM webhook_leases WHERE id = ANY(${[...leaseIds]}::text[])`;
  slotReleased();
}

/** Slots whose holder died: they count no more (see above), and are removed by the sweep. */
export async function deleteExpiredSlots(db: Database): Promise<number> {
  return db.$executeRaw`DELETE FROM webhook_leases WHERE "expiresAt" < now()`;
}

/*
 * Waiting for a slot. All the attempts of one process that wait for slots queue in one line, in the
 * order they asked, and one query at a time asks for the head of it (at most an endpoint's bound of
 * each endpoint's, since no more could be granted; the function ranks them in line order per
 * endpoint and organisation): however many batches wait, a process sends one query per round, and
 * nobody is overtaken. A round follows a slot freed in this process at once (but not before
 * MIN_ROUND_MS), one freed by another process within POLL_MS, and a waiter that joined during a
 * round at once: only waiters already told busy wait for a slot to free.
 *
 * Waiting is for busy endpoints, not slow ones. A waiter gives up (a batch then puts the delivery
 * back into the outbox) when its endpoint's waiters have not moved for its patience, or when the
 * endpoint's attempts each outlast its patience (this process's recent average, or how long its
 * oldest attempt still out has been out), one of them still out has outlasted it, and it is not
 * among the next to go. (Without the attempt still out, an endpoint slow a minute ago and fast
 * again would have its whole burst put back on the strength of an old average.) A burst,
 * whose slots turn over in milliseconds to a few hundred, queues here however long its line (up to
 * maxMs); a tarpit's backlog does not.
 */
const MIN_ROUND_MS = 20;
const POLL_MS = 100;
/** Attempts one round asks for at most. */
const ROUND_LIMIT = 512;
const CHECK_MS = 250;
const wakers = new Set<() => void>();

/** Called whenever this process frees a slot. */
export function slotReleased(): void {
  for (const wake of wakers) wake();
  wakers.clear();
}

function slotMayBeFree(): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const wake = () => {
      clearTimeout(timer);
      const early = MIN_ROUND_MS - (Date.now() - started);
      if (early > 0) setTimeout(resolve, early);
      else resolve();
    };
    const timer = setTimeout(() => {
      wakers.delete(wake);
      resolve();
    }, POLL_MS);
    wakers.add(wake);
  });
}

/** Recent attempt durations per endpoint, in this process (moving averages, bounded in number). */
const durations = new Map<string, number>();
const DURATIONS_KEPT = 10_000;
/**
 * Attempts granted a slot by this process's line and not yet recorded, by lease: how long the
 * oldest has been out is a lower bound on its endpoint's attempts before any of them answers (the
 * first seconds of a tarpit, whose average is not known yet).
 */
const outstanding = new Map<string, { endpointId: string; since: number }>();
/** An attempt never recorded (its activity failed before the record) stops counting after this. */
const OUTSTANDING_FORGET_MS = 10 * 60_000;

/** Tells the waiting line that the attempt of this slot is over, and how long its send took if it was sent. */
export function attemptFinished(lease: string, endpointId: string, sentForMs: number | null): void {
  outstanding.delete(lease);
  if (sentForMs === null) return;
  const previous = durations.get(endpointId);
  durations.delete(endpointId);
  if (durations.size >= DURATIONS_KEPT) durations.delete(durations.keys().next().value!);
  durations.set(endpointId, previous === undefined ? sentForMs : previous * 0.7 + sentForMs * 0.3);
}

/** How long an attempt to this endpoint takes, as far as this process can tell. */
function attemptEstimate(endpointId: string, oldestOut: number | undefined, now: number): number {
  return Math.max(durations.get(endpointId) ?? 0, oldestOut === undefined ? 0 : now - oldestOut);
}

export interface SlotRequest {
  leaseId: string;
  deliveryId: string;
  endpointId: string;
  organisationId: string;
}

interface Waiting extends SlotRequest {
  answer(outcome: SlotOutcome): void;
}

class SlotLine {
  #line: Waiting[] = [];
  #running = false;
  /** How many times waiters joined: a round that saw none join asks again only once a slot may be free. */
  #joins = 0;
  /** When a waiter of each endpoint last got an answer other than busy (bounded in number). */
  readonly #moved = new Map<string, number>();

  constructor(
    readonly db: Database,
    readonly limits: SlotLimits,
  ) {}

  join(entries: Waiting[]): void {
    this.#joins += 1;
    this.#line.push(...entries);
    if (!this.#running) void this.#rounds();
  }

  /** When the endpoint's waiters last moved (one got a slot, or the breaker's answer). */
  movedAt(endpointId: string): number {
    return this.#moved.get(endpointId) ?? 0;
  }

  /**
   * Whether these endpoints moved in any process: when another process's waiters take every slot
   * freed (each process hears of its own releases first), ours stand still while the endpoint is
   * merely busy. The newest slot of an endpoint tells when one was last granted anywhere.
   */
  async noteMovesElsewhere(endpointIds: readonly string[]): Promise<void> {
    if (endpointIds.length === 0) return;
    const leaseMs = this.limits.WEBHOOK_ATTEMPT_TIMEOUT + LEASE_MARGIN_MS;
    const rows = await this.db.$queryRaw<Array<{ endpoint_id: string; ms_since: number }>>`
      SELECT "endpointId" AS endpoint_id,
             (extract(epoch FROM clock_timestamp() - (max("expiresAt") - make_interval(secs => ${leaseMs}::float8 / 1000))) * 1000)::float8 AS ms_since
        FROM webhook_leases WHERE "endpointId" = ANY(${[...endpointIds]}::text[]) AND "expiresAt" > clock_timestamp() GROUP BY 1`;
    const now = Date.now();
    for (const row of rows) {
      const at = now - Math.max(0, row.ms_since);
      if (at > this.movedAt(row.endpoint_id)) this.#moved.set(row.endpoint_id, at);
    }
  }

  leave(waiting: ReadonlySet<Waiting>): void {
    this.#line = this.#line.filter((w) => !waiting.has(w));
  }

  /**
   * How long each of these would still wait, judging by its place among its endpoint's waiters,
   * this process's attempts to that endpoint still out, and how long they take. While fewer than
   * the bound are out or ahead, a slot is expected at once: an endpoint once slow is not shunned
   * for it (other processes' attempts are not known here; the waiter's deadline covers them).
   */
  expectedWaits(of: ReadonlySet<Waiting>): Map<Waiting, { waitMs: number; attemptMs: number; outForMs: number }> {
    const now = Date.now();
    const out = new Map<string, { count: number; oldest: number }>();
    for (const [lease, { endpointId, since }] of outstanding) {
      if (now - since > OUTSTANDING_FORGET_MS) {
        outstanding.delete(lease);
        continue;
      }
      const seen = out.get(endpointId);
      out.set(endpointId, { count: (seen?.count ?? 0) + 1, oldest: Math.min(seen?.oldest ?? since, since) });
    }
    const bound = this.limits.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT;
    const ahead = new Map<string, number>();
    const waits = new Map<Waiting, { waitMs: number; attemptMs: number; outForMs: number }>();
    for (const w of this.#line) {
      const place = ahead.get(w.endpointId) ?? 0;
      ahead.set(w.endpointId, place + 1);
      if (!of.has(w)) continue;
      const endpointOut = out.get(w.endpointId);
      const before = place + (endpointOut?.count ?? 0);
      const rounds = before < bound ? 0 : Math.floor((before - bound) / bound) + 1;
      const attemptMs = attemptEstimate(w.endpointId, endpointOut?.oldest, now);
      waits.set(w, { waitMs: rounds * attemptMs, attemptMs, outForMs: endpointOut === undefined ? 0 : now - endpointOut.oldest });
    }
    return waits;
  }

  async #rounds(): Promise<void> {
    this.#running = true;
    try {
      while (this.#line.length > 0) {
        const joinsBefore = this.#joins;
        const asking = this.#head();
        let outcomes: Map<string, SlotOutcome>;
        try {
          outcomes = await acquireSlots(this.db, this.limits, asking);
        } catch {
          // The database is away: the waiters' own deadlines apply; try again after a pause.
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          continue;
        }
        const answered = new Set<Waiting>();
        const taken = new Set<string>();
        for (const w of this.#line) {
          const outcome = outcomes.get(w.leaseId);
          if (outcome === undefined || outcome === 'busy') continue;
          answered.add(w);
          taken.add(w.leaseId);
          if (outcome === 'granted') outstanding.set(w.leaseId, { endpointId: w.endpointId, since: Date.now() });
          this.#moved.delete(w.endpointId);
          if (this.#moved.size >= DURATIONS_KEPT) this.#moved.delete(this.#moved.keys().next().value!);
          this.#moved.set(w.endpointId, Date.now());
          w.answer(outcome);
        }
        // Granted to a waiter that left the line meanwhile (it gave up): given back.
        const unwanted = asking.filter((r) => outcomes.get(r.leaseId) === 'granted' && !taken.has(r.leaseId)).map((r) => r.leaseId);
        this.#line = this.#line.filter((w) => !answered.has(w));
        if (unwanted.length > 0) await releaseSlots(this.db, unwanted).catch(() => {});
        // A waiter that joined during this round (an ordered object's next delivery, a new batch)
        // is asked in the next at once.
        if (this.#line.length > 0 && this.#joins === joinsBefore) await slotMayBeFree();
      }
    } finally {
      this.#running = false;
    }
  }

  /**
   * The head of the line, one request per slot (two executions of one attempt share it), at most a
   * bound's worth per endpoint and per organisation: more could not be granted, and would only keep
   * the waiters behind them (other endpoints, other tenants) out of the round.
   */
  #head(): SlotRequest[] {
    const perEndpoint = new Map<string, number>();
    const perOrganisation = new Map<string, number>();
    const leases = new Set<string>();
    const head: SlotRequest[] = [];
    for (const w of this.#line) {
      if (head.length >= ROUND_LIMIT) break;
      if (leases.has(w.leaseId)) continue;
      const n = perEndpoint.get(w.endpointId) ?? 0;
      if (n >= this.limits.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT) continue;
      const m = perOrganisation.get(w.organisationId) ?? 0;
      if (m >= this.limits.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION) continue;
      perEndpoint.set(w.endpointId, n + 1);
      perOrganisation.set(w.organisationId, m + 1);
      leases.add(w.leaseId);
      head.push(w);
    }
    return head;
  }
}

const lines = new WeakMap<Database, Map<string, SlotLine>>();

/** The line of this database handle and these limits (one per process). */
function lineOf(db: Database, limits: SlotLimits): SlotLine {
  const key = `${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT}/${limits.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION}/${limits.WEBHOOK_BREAKER_THRESHOLD}/${limits.WEBHOOK_ATTEMPT_TIMEOUT}`;
  let byLimits = lines.get(db);
  if (!byLimits) lines.set(db, (byLimits = new Map<string, SlotLine>()));
  let line = byLimits.get(key);
  if (!line) byLimits.set(key, (line = new SlotLine(db, limits)));
  return line;
}

/**
 * Waits in this process's line for slots for these attempts, calling `onAnswer` as each gets an
 * answer other than busy, until all have one. A request gives up (answered busy) as soon as it
 * would wait longer than `patienceMs` (see above), and every request after `maxMs` in all.
 */
export async function waitForSlots(
  db: Database,
  limits: SlotLimits,
  requests: readonly SlotRequest[],
  options: { patienceMs: number; maxMs: number; gaveUp?: Map<string, GiveUpReason> },
  onAnswer?: (leaseId: string, outcome: SlotOutcome) => void,
): Promise<Map<string, SlotOutcome>> {
  const answers = new Map<string, SlotOutcome>(requests.map((r) => [r.leaseId, 'busy']));
  if (requests.length === 0) return answers;
  const line = lineOf(db, limits);
  const started = Date.now();
  let pending = requests.length;
  const done = new Set<Waiting>();
  await new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const giveUp = (which: Waiting[], reason: (w: Waiting) => GiveUpReason) => {
      line.leave(new Set(which));
      for (const w of which) {
        const why = reason(w);
        webhookSlotGiveUps.inc({ reason: why });
        options.gaveUp?.set(w.leaseId, why);
        w.answer('busy');
      }
    };
    const check = async () => {
      if (pending === 0) return;
      if (Date.now() - started >= options.maxMs)
        return giveUp(
          waiting.filter((w) => !done.has(w)),
          () => 'max',
        );
      const stalled = (w: Waiting) => Date.now() - Math.max(started, line.movedAt(w.endpointId)) >= options.patienceMs;
      const standing = waiting.filter((w) => !done.has(w) && stalled(w));
      if (standing.length > 0) await line.noteMovesElsewhere([...new Set(standing.map((w) => w.endpointId))]).catch(() => {});
      if (pending === 0) return;
      const waitingNow = waiting.filter((w) => !done.has(w));
      const waits = line.expectedWaits(new Set(waitingNow));
      // Slow now, not only once: an attempt of this process to the endpoint has been out longer than the
      // patience. An endpoint that was a tarpit a minute ago and answers at once again keeps its waiters.
      const slow = (w: Waiting) => {
        const expected = waits.get(w);
        return (
          expected !== undefined &&
          expected.attemptMs > options.patienceMs &&
          expected.waitMs > options.patienceMs &&
          expected.outForMs >= options.patienceMs
        );
      };
      const hopeless = waitingNow.filter((w) => stalled(w) || slow(w));
      if (hopeless.length > 0) giveUp(hopeless, (w) => (stalled(w) ? 'stalled' : 'slow'));
      if (pending > 0) timer = setTimeout(() => void check(), Math.max(1, Math.min(CHECK_MS, options.maxMs - (Date.now() - started))));
    };
    const waiting: Waiting[] = requests.map((r) => {
      const w: Waiting = {
        ...r,
        answer: (outcome: SlotOutcome) => {
          if (done.has(w)) return;
          done.add(w);
          answers.set(r.leaseId, outcome);
          pending -= 1;
          if (outcome !== 'busy') onAnswer?.(r.leaseId, outcome);
          if (pending === 0) {
            clearTimeout(timer);
            resolve();
          }
        },
      };
      return w;
    });
    line.join(waiting);
    void check();
  });
  return answers;
}
