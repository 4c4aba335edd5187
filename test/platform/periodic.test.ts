import { describe, expect, it } from 'vitest';
import { runPeriodically } from '../../src/db/periodic.ts';
import { createLogger } from '../../src/log.ts';
import { useTestApp } from '../support/app.ts';
import { tag } from '../support/fixtures.ts';

/** A task that several processes run on a timer, once per period across them (src/db/periodic.ts). */

const app = useTestApp();

describe('a periodic task', () => {
  it('that fails tick after tick is said once at warn for each new error, and again at info once it runs', async () => {
    const lines: Array<{ level: string; msg: string; task?: string }> = [];
    const logger = createLogger('info', 'worker', { write: (line: string) => void lines.push(JSON.parse(line)) });
    let runs = 0;
    const name = `periodic-${tag()}`;
    const periodic = runPeriodically(
      app().runtime.db,
      name,
      50,
      async () => {
        runs += 1;
        if (runs <= 4) throw new Error('the database does not answer');
        if (runs === 5) throw new Error('another fault');
      },
      logger,
    );
    const until = Date.now() + 10_000;
    while (runs < 8 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 25));
    await periodic.stop();
    expect(runs).toBeGreaterThanOrEqual(8);
    expect(lines.filter((line) => line.task === name).map((line) => [line.level, line.msg])).toEqual([
      ['warn', 'periodic task failed: it is tried every period, and said again once it runs'],
      ['warn', 'periodic task failed: it is tried every period, and said again once it runs'],
      ['info', 'periodic task runs again'],
    ]);
  });
});
