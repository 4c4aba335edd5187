import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.ts';
import type { Database } from './client.ts';

/**
 * A periodic task that several processes run on a timer (every worker runs the hold sweep and the
 * pruning) but that runs once per period across all of them: on each tick a process tries to take
 * the task's lease for one period in PostgreSQL (`periodic_tasks`), and only the one that gets it
 * runs the task. A process that dies holding it loses it when the period ends.
 */

const HOLDER = `${process.pid}-${randomBytes(4).toString('hex')}`;

/** Takes the lease of `name` for `periodMs` when it is free (or already ours); answers whether it did. */
export async function takeLease(db: Database, name: string, periodMs: number): Promise<boolean> {
  const rows = await db.$queryRaw<Array<{ name: string }>>`
    INSERT INTO periodic_tasks (name, "heldBy", "leaseUntil") VALUES (${name}, ${HOLDER}, now() + ${`${periodMs} milliseconds`}::interval)
    ON CONFLICT (name) DO UPDATE SET "heldBy" = EXCLUDED."heldBy", "leaseUntil" = EXCLUDED."leaseUntil"
    WHERE periodic_tasks."leaseUntil" <= now() OR periodic_tasks."heldBy" = EXCLUDED."heldBy"
    RETURNING name`;
  return rows.length === 1;
}

/**
 * Runs `task` every `periodMs` in whichever process holds the lease. A tick slightly shorter than
 * the period makes a holder renew before its lease ends, so the task keeps its rhythm in one place.
 */
export function runPeriodically(
  db: Database,
  name: string,
  periodMs: number,
  task: () => Promise<unknown>,
  logger?: Logger,
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  // A task failing tick after tick with the same error (the database gone for a while) is said
  // once, and again once it runs here: not a line per period for as long as it lasts. Another
  // error is said as it comes (test/platform/periodic.test.ts).
  let failing: string | undefined;
  const tick = () => {
    running = running.then(async () => {
      try {
        if (!(await takeLease(db, name, periodMs))) return;
        await task();
        if (failing !== undefined) logger?.info({ task: name }, 'periodic task runs again');
        failing = undefined;
      } catch (error) {
        const said = error instanceof Error ? error.message : String(error);
        if (failing === said) logger?.debug({ err: error, task: name }, 'periodic task failed again');
        else logger?.warn({ err: error, task: name }, 'periodic task failed: it is tried every period, and said again once it runs');
        failing = said;
      }
    });
  };
  const timer = setInterval(tick, Math.max(1, periodMs - Math.min(1000, periodMs / 10)));
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
