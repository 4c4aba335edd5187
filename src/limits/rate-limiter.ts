import { sha256 } from '../auth/keys.ts';
import type { Database } from '../db/client.ts';
import { systemRows, type FlightStatements, type SystemStatement } from '../db/sql.ts';
import { AppError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { throttleRefusals } from '../metrics.ts';

/**
 * Rate limits and throttles kept in PostgreSQL, so every API process counts the same uses: with
 * counters in each process's memory, N processes behind a load balancer would allow N times the
 * limit, and a client alternating between them would never be throttled. Each check is one
 * statement on a primary key (rate limits: a prepared pg statement, not Prisma, which a checkout
 * sends in the flights of its own statements: `on`). The subject (a client address, an email, a
 * key id) is stored only as part of a sha256, never in the clear.
 */

export function tooMany(retryAfterSeconds: number, message = 'Too many requests; try again later.'): AppError {
  return new AppError('RATE_LIMITED', message, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
}

/** A refusal of `limit` (a name from the code, never a subject), counted in throttle_refusals_total. */
function refused(limit: string, retryAfterSeconds: number, message?: string): AppError {
  throttleRefusals.inc({ limit });
  return tooMany(retryAfterSeconds, message);
}

function keyOf(limit: string, subject: string): string {
  return sha256(`${limit}\u0000${subject}`);
}

/** The uses counted in a limit's current window, and the check against a maximum made with them. */
export interface WindowUse {
  count: number;
  /** Refuses (429 RATE_LIMITED with Retry-After until the window ends) when `max` uses are counted. */
  assertUnder(max: number, message?: string): void;
}

/**
 * Fixed windows aligned on multiples of the window length: `take` counts a use and refuses it beyond
 * `max` in the window (refused uses count too, so a client that keeps hammering stays refused until
 * the window ends); `check` and `count` split the two for limits that count only what succeeded.
 */
export class RateLimiter {
  constructor(private readonly db: Database) {}

  /**
   * Counts one use and refuses it (429 RATE_LIMITED with Retry-After) beyond `max` in the window;
   * in `on`'s flight when given.
   */
  async take(limit: string, subject: string, max: number, windowMs: number, message?: string, on?: FlightStatements): Promise<void> {
    const { count, retryAfterMs } = await this.#add(limit, subject, windowMs, on);
    if (count > max) throw refused(limit, retryAfterMs / 1000, message);
  }

  /** Refuses (429) when `max` uses are counted in the current window already; counts nothing. */
  async check(limit: string, subject: string, max: number, windowMs: number, message?: string): Promise<void> {
    (await this.used(limit, subject, windowMs)).assertUnder(max, message);
  }

  /**
   * The uses counted in the current window, read (in `on`'s flight, when given) for a check made
   * later: `assertUnder` refuses as `check` does.
   */
  async used(limit: string, subject: string, windowMs: number, on?: FlightStatements): Promise<WindowUse> {
    const start = windowStart(windowMs);
    const rows = await this.#rows<{ count: number }>(on, {
      text: 'SELECT count FROM rate_limit_windows WHERE key = $1 AND "windowStart" = $2',
      values: [keyOf(limit, subject), start],
    });
    const count = rows[0]?.count ?? 0;
    return {
      count,
      assertUnder(max, message) {
        if (count >= max) throw refused(limit, (start.getTime() + windowMs - Date.now()) / 1000, message);
      },
    };
  }

  /**
   * Counts one use without refusing; in `on`'s flight when given, so a use counted in a
   * transaction counts only if it commits.
   */
  async count(limit: string, subject: string, windowMs: number, on?: FlightStatements): Promise<void> {
    await this.#add(limit, subject, windowMs, on);
  }

  #rows<T>(on: FlightStatements | undefined, statement: SystemStatement): Promise<T[]> {
    return on ? on.systemRows<T>(statement) : systemRows<T>(this.db, statement);
  }

  async #add(limit: string, subject: string, windowMs: number, on?: FlightStatements): Promise<{ count: number; retryAfterMs: number }> {
    const start = windowStart(windowMs);
    const rows = await this.#rows<{ count: number }>(on, {
      text: `INSERT INTO rate_limit_windows (key, "windowStart", count) VALUES ($1, $2, 1)
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN rate_limit_windows."windowStart" = EXCLUDED."windowStart" THEN rate_limit_windows.count + 1 ELSE 1 END,
        "windowStart" = EXCLUDED."windowStart"
      RETURNING count`,
      values: [keyOf(limit, subject), start],
    });
    return { count: rows[0]!.count, retryAfterMs: start.getTime() + windowMs - Date.now() };
  }
}

function windowStart(windowMs: number, now = Date.now()): Date {
  return new Date(Math.floor(now / windowMs) * windowMs);
}

/** One subject of a throttle and the failures it may have before it must wait. */
export interface ThrottleSubject {
  /** What is throttled, e.g. 'sign-in:email'. */
  limit: string;
  subject: string;
  /** Failures without delay; after the n-th failure (n >= free) the next attempt waits 2^(n - free) s. */
  free: number;
}

/** The longest wait a throttle imposes. */
export const MAX_THROTTLE_DELAY_SECONDS = 15 * 60;
/** Failures are forgotten after this long without a new one. */
const FAILURE_MEMORY = '1 hour';

/**
 * Growing delays after failed credential checks (passwords, invitation and magic-link codes): a few
 * failures cost nothing, then each further failure doubles the wait before the next attempt is
 * even looked at, up to 15 minutes. While a subject waits, every attempt is refused before the
 * credential is checked, the right one included, so guessing gains nothing from parallelism.
 */
export class Throttle {
  constructor(private readonly db: Database) {}

  /** Refuses (429 with Retry-After) while any of the subjects must wait. */
  async assertAllowed(subjects: readonly ThrottleSubject[], message = 'Too many failed attempts; try again later.'): Promise<void> {
    const keys = subjects.map((s) => keyOf(s.limit, s.subject));
    const rows = await this.db.$queryRaw<Array<{ seconds: number }>>`
      SELECT ceil(extract(epoch FROM max("blockedUntil") - now()))::int AS seconds
      FROM throttles WHERE key = ANY(${keys}) AND "blockedUntil" > now()`;
    const seconds = rows[0]?.seconds;
    if (seconds !== null && seconds !== undefined) throw refused(subjects[0]?.limit ?? 'throttle', seconds, message);
  }

  /** Records one failure for each subject. */
  async fail(subjects: readonly ThrottleSubject[]): Promise<void> {
    for (const { limit, subject, free } of subjects) {
      // The new failure count appears twice: once stored, once for the wait it earns.
      await this.db.$executeRaw`
        INSERT INTO throttles (key, failures, "lastFailureAt", "blockedUntil")
        VALUES (${keyOf(limit, subject)}, 1, now(), CASE WHEN 1 >= ${free} THEN now() + interval '1 second' END)
        ON CONFLICT (key) DO UPDATE SET
          failures = CASE WHEN throttles."lastFailureAt" < now() - ${FAILURE_MEMORY}::interval THEN 1 ELSE throttles.failures + 1 END,
          "lastFailureAt" = now(),
          "blockedUntil" = CASE
            WHEN (CASE WHEN throttles."lastFailureAt" < now() - ${FAILURE_MEMORY}::interval THEN 1 ELSE throttles.failures + 1 END) >= ${free}
            THEN now() + make_interval(secs => least(
              power(2, (CASE WHEN throttles."lastFailureAt" < now() - ${FAILURE_MEMORY}::interval THEN 1 ELSE throttles.failures + 1 END) - ${free}),
              ${MAX_THROTTLE_DELAY_SECONDS}))
          END`;
    }
  }

  /** Forgets the failures of a subject (after a success). */
  async clear(subject: ThrottleSubject): Promise<void> {
    await this.db.$executeRaw`DELETE FROM throttles WHERE key = ${keyOf(subject.limit, subject.subject)}`;
  }
}

/** Deletes windows and failures nobody can be refused by any more (the worker runs this). */
export async function pruneLimits(db: Database, logger?: Logger): Promise<void> {
  const windows = await db.$executeRaw`DELETE FROM rate_limit_windows WHERE "windowStart" < now() - interval '1 day'`;
  const throttles = await db.$executeRaw`DELETE FROM throttles WHERE "lastFailureAt" < now() - interval '1 day'`;
  if (windows + throttles > 0) logger?.debug({ windows, throttles }, 'pruned expired rate-limit rows');
}

/**
 * The part of a client address that names one client: IPv4 whole (IPv4-mapped IPv6 unwrapped),
 * IPv6 by its /64 (one subscriber usually holds a whole /64, so single addresses are free to rotate).
 */
export function clientBucket(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => (group || '0').toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
