import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation } from '../support/fixtures.ts';

interface LogLine {
  level: string;
  msg: string;
  requestId?: string;
}

/** What the API logged, at debug, through the service's own logger. */
const lines: LogLine[] = [];
const app = useTestApp(
  { LOG_LEVEL: 'debug' },
  { logger: createLogger('debug', 'api', { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }) },
);

/**
 * An expected refusal (not found, a conflict such as a sold-out checkout, bad input) is an answer,
 * not a fault: operators alert on error lines, and an on-sale refuses thousands of buyers.
 */
describe('what the API logs about refusals', () => {
  it('logs an expected refusal below warn, with its request line carrying the status', async () => {
    const org = await createOrganisation(app, 'errlog');
    const missing = await api(app, 'GET', '/v1/events/evt_0000000000000000000000', { token: org.adminToken, org: org.slug });
    expect(missing.status).toBe(404);
    const invalid = await api(app, 'POST', '/v1/events', { token: org.adminToken, org: org.slug, body: { name: '' } });
    expect(invalid.status).toBe(400);

    for (const res of [missing, invalid]) {
      const requestId = res.headers.get('x-request-id')!;
      const logged = lines.filter((line) => line.requestId === requestId);
      expect(logged.some((line) => line.msg === 'request')).toBe(true);
      expect(logged.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
    }
  });
});
