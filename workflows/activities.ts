import type { Database } from '../src/db/client.ts';
import type { Logger } from '../src/log.ts';

export interface ActivityDependencies {
  db: Database;
  logger: Logger;
}

/** Activities receive their dependencies from the worker that hosts them. */
export function createActivities({ db }: ActivityDependencies) {
  return {
    async ping(_name: string): Promise<{ database: string }> {
      const [row] = await db.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
      return { database: row ? 'ok' : 'no answer' };
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
