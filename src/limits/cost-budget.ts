import type { Principal } from '../auth/principal.ts';
import type { Config, CostLane, CostOverride } from '../config.ts';
import { poolOf, type Database } from '../db/client.ts';
import type { Logger } from '../log.ts';
import { throttleRefusals } from '../metrics.ts';

/**
 * Each organisation's GraphQL cost budget: one token bucket per lane, of `budget` points restoring
 * at `restoreRate` points a second, shared by every API process and by /graphql, /v1 and /live
 * (they run the same operations through the same pipeline). An operation is charged its requested
 * cost (operationCost) before it runs and refunded what it did not use (requested - actual) after;
 * when the bucket cannot pay the requested cost the operation is refused (429 RATE_LIMITED with
 * Retry-After) without running. So a tenant whose queries are expensive waits for its own bucket
 * and cannot take the API from the others, and the sales lane (channel keys, customer tokens) is a
 * bucket of its own, so a busy back office never starves a storefront, nor a storefront the back office.
 *
 * The bucket is a row of cost_budgets (the level at a time; budget and rate are configuration).
 * A process does not go to it per request: it leases a slice (a twentieth of the budget, or the
 * operation's requested cost if larger) with one UPDATE … RETURNING, which also hands back what
 * the process still held, and spends the slice in memory; it leases again when the slice runs
 * out, and at its first operation after LEASE_MS. What that costs in accuracy, with N processes,
 * per organisation and lane:
 * - a process holds at most about two slices (a refund that takes it past two is handed back at
 *   once). The row restores up to the budget while slices are out, so at one moment the
 *   organisation can spend at most its budget plus two slices per process (a tenth of the budget
 *   each); over time never more than its rate, since every slice is paid for when it is leased;
 * - a process can be refused while up to two slices per other process sit unspent there: it
 *   waits at most that many points' restoring longer (0.2 s per other process at the defaults);
 * - `remaining` is the row's level at this process's last lease (at most LEASE_MS ago while it
 *   serves the organisation), restored since, plus what it holds: what other processes leased
 *   after that is not in it.
 * A process that stops takes its unspent slice with it; the bucket restores it like any spending.
 * test/platform/cost-budget.test.ts runs two API processes on one bucket.
 */

/**
 * How long a lease is spent from before its rest is returned and the row read again (ms): how
 * stale `remaining` may be. Longer would save little (one statement per organisation, lane and
 * process in this time); shorter would cost a statement for most operations of a quiet tenant.
 */
const LEASE_MS = 10_000;
/** A slice is this share of the budget (and at least what the operation asks). */
const SLICE_SHARE = 1 / 20;

/** What an answer says of its cost (extensions.cost). */
export interface CostReport {
  requested: number;
  actual: number;
  /** The lane's bucket size; null for a caller charged to no organisation. */
  budget: number | null;
  /** Points left in the bucket after this operation (0 while it owes). */
  remaining: number | null;
  /** Points restored per second. */
  restoreRate: number | null;
}

/** What the budget needs of a request's context (RequestContext has it). */
export interface CostCaller {
  principal: Principal | null;
  organisation: { id: string; slug: string } | null;
}

/** One organisation's bucket in one lane, as this process holds it. */
export class CostBucket {
  /** Leased from the row and not yet spent; below 0 when operations cost more than they asked. */
  held = 0;
  /** When this process last leased (Date.now()). */
  leasedAt = Number.NEGATIVE_INFINITY;
  /** Whether the last lease got all it asked for: the row had plenty. */
  filled = false;
  /** The row's level right after the last lease. */
  rowPoints = 0;
  /** The lease in flight: one per bucket and process at a time. */
  leasing: Promise<void> | undefined;

  constructor(
    readonly organisationId: string,
    readonly lane: CostLane,
    readonly budget: number,
    readonly restoreRate: number,
  ) {}

  get slice(): number {
    return Math.max(1, Math.ceil(this.budget * SLICE_SHARE));
  }

  /** The bucket's level as this process knows it (see above); below 0 while it owes. */
  level(now = Date.now()): number {
    const row = Math.min(this.budget, this.rowPoints + (this.restoreRate * Math.max(0, now - this.leasedAt)) / 1000);
    return Math.min(this.budget, row + this.held);
  }

  remaining(): number {
    return Math.max(0, Math.floor(this.level()));
  }

  report(requested: number, actual: number): CostReport {
    return { requested, actual, budget: this.budget, remaining: this.remaining(), restoreRate: this.restoreRate };
  }
}

/** The outcome of charging an operation: paid (refund it with settle), or refused. */
export type CostCharge = { paid: true } | { paid: false; retryAfterSeconds: number };

const LEASE = `WITH level AS (
    SELECT least($3::float8, points + $4::float8 * greatest(0, extract(epoch FROM now() - "updatedAt")) + $5::float8) AS points
    FROM cost_budgets WHERE "organisationId" = $1 AND lane = $2 FOR UPDATE
  ), lease AS (
    SELECT points AS level, CASE WHEN points >= $6::float8 THEN least(points, $7::float8) ELSE 0 END AS granted FROM level
  )
  UPDATE cost_budgets SET points = lease.level - lease.granted, "updatedAt" = now()
  FROM lease WHERE "organisationId" = $1 AND lane = $2
  RETURNING lease.level, lease.granted`;

const CREATE = `INSERT INTO cost_budgets ("organisationId", lane, points, "updatedAt") VALUES ($1, $2, $3, now())
  ON CONFLICT DO NOTHING`;

/** The lane of a caller: storefront credentials spend the sales lane, everyone else the admin lane. */
export function laneOf(principal: Principal): CostLane {
  return principal.kind === 'channel' || principal.kind === 'customer' ? 'sales' : 'admin';
}

/** The buckets of one API process (one per organisation and lane it has served). */
export class CostBudgets {
  readonly #buckets = new Map<string, CostBucket>();
  readonly #overrides: Map<string, CostOverride>;
  readonly #defaults: Record<CostLane, { budget: number; restoreRate: number }>;

  constructor(
    private readonly db: Database,
    config: Pick<
      Config,
      'COST_ADMIN_BUDGET' | 'COST_ADMIN_RESTORE_RATE' | 'COST_SALES_BUDGET' | 'COST_SALES_RESTORE_RATE' | 'COST_RATE_OVERRIDES'
    >,
    private readonly logger: Logger,
  ) {
    this.#defaults = {
      admin: { budget: config.COST_ADMIN_BUDGET, restoreRate: config.COST_ADMIN_RESTORE_RATE },
      sales: { budget: config.COST_SALES_BUDGET, restoreRate: config.COST_SALES_RESTORE_RATE },
    };
    this.#overrides = new Map(config.COST_RATE_OVERRIDES.map((override) => [`${override.organisation}/${override.lane}`, override]));
  }

  /**
   * The bucket a caller's operations are charged to, or undefined for a caller acting in no
   * organisation (signing in, public reads) or with no credential: those are bounded per operation
   * (LIMITS.maxCost) and by the sign-in throttles, never charged to a tenant anyone can name.
   */
  bucketOf(caller: CostCaller): CostBucket | undefined {
    const { principal, organisation } = caller;
    if (!principal || !organisation) return undefined;
    const lane = laneOf(principal);
    const key = `${organisation.id}/${lane}`;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      const defaults = this.#defaults[lane];
      const override = this.#overrides.get(`${organisation.id}/${lane}`) ?? this.#overrides.get(`${organisation.slug}/${lane}`);
      // An override without a budget keeps the default's burst: as many seconds of restoring.
      const restoreRate = override?.restoreRate ?? defaults.restoreRate;
      const budget =
        override?.budget ?? (override ? Math.max(1, Math.round((restoreRate * defaults.budget) / defaults.restoreRate)) : defaults.budget);
      bucket = new CostBucket(organisation.id, lane, budget, restoreRate);
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  /** Charges `requested` points, from the slice this process holds when it can (no database). */
  charge(bucket: CostBucket, requested: number): CostCharge | Promise<CostCharge> {
    const now = Date.now();
    if (requested <= 0) return { paid: true };
    if (bucket.held >= requested && now - bucket.leasedAt < LEASE_MS) {
      bucket.held -= requested;
      return { paid: true };
    }
    if (bucket.leasing) return bucket.leasing.then(() => this.charge(bucket, requested));
    // The row could not fill the last lease: it is asked again once it should hold a slice (or
    // the operation) again by what it said then, so a refused or starved tenant's operations do
    // not each cost a statement (at most restoreRate / slice a second, 10 at the defaults).
    if (!bucket.filled && bucket.level(now) < this.#wanted(bucket, requested)) return this.#refusal(bucket, requested);
    return this.#lease(bucket, requested).then(() => {
      if (bucket.held < requested) return this.#refusal(bucket, requested);
      bucket.held -= requested;
      return { paid: true };
    });
  }

  /** Refunds what the operation did not use; charges it more if it used more (a list longer than asked). */
  settle(bucket: CostBucket, requested: number, actual: number): void {
    bucket.held += requested - actual;
    // A large refund goes back to the row, so no process sits on more than two slices.
    if (bucket.held > 2 * bucket.slice && !bucket.leasing) {
      this.#lease(bucket, 0).catch((error: unknown) => this.logger.warn({ err: error }, 'returning unspent cost points failed'));
    }
  }

  /** Refused until the bucket should hold what this process will ask the row for next. */
  #refusal(bucket: CostBucket, requested: number): CostCharge {
    throttleRefusals.inc({ limit: `cost:${bucket.lane}` });
    const missing = this.#wanted(bucket, requested) - bucket.level();
    return { paid: false, retryAfterSeconds: Math.max(1, Math.ceil(missing / bucket.restoreRate)) };
  }

  #wanted(bucket: CostBucket, requested: number): number {
    return Math.max(bucket.slice, requested);
  }

  /**
   * Returns what this process holds to the row and takes a fresh slice (at least `need`); takes
   * nothing when the row cannot pay `need`.
   */
  #lease(bucket: CostBucket, need: number): Promise<void> {
    const leasing = this.#exchange(bucket, need).finally(() => {
      bucket.leasing = undefined;
    });
    bucket.leasing = leasing;
    return leasing;
  }

  async #exchange(bucket: CostBucket, need: number): Promise<void> {
    const returned = bucket.held;
    const want = this.#wanted(bucket, need);
    const pool = poolOf(this.db);
    const values = [bucket.organisationId, bucket.lane, bucket.budget, bucket.restoreRate, returned, need, want];
    let { rows } = await pool.query<{ level: number; granted: number }>({ name: 'cost_budget_lease', text: LEASE, values });
    if (rows.length === 0) {
      await pool.query({ name: 'cost_budget_create', text: CREATE, values: [bucket.organisationId, bucket.lane, bucket.budget] });
      ({ rows } = await pool.query<{ level: number; granted: number }>({ name: 'cost_budget_lease', text: LEASE, values }));
    }
    const { level, granted } = rows[0]!;
    // Refunds settled while the statement ran stay held: only what was returned is taken off.
    bucket.held += granted - returned;
    bucket.rowPoints = level - granted;
    bucket.leasedAt = Date.now();
    bucket.filled = granted >= want;
  }
}
