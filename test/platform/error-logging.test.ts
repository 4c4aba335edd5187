import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, systemRole } from '../support/fixtures.ts';

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

describe('what a line carries', () => {
  it('a line written while serving a request carries its id and organisation, not what the service counts there', async () => {
    const org = await createOrganisation(app, 'errlog');
    const invited = await api(app, 'POST', '/v1/user-invitations', {
      token: org.adminToken,
      org: org.slug,
      body: { organisationId: org.organisation.id, email: 'logged@errlog.test', roleIds: [systemRole(org, 'viewer')] },
    });
    expect(invited.status).toBe(201);
    // Written after the invitation committed.
    const mailed = lines.find((one) => one.requestId === invited.headers.get('x-request-id') && one.msg.includes('outbox'));
    expect(mailed).toMatchObject({ organisationId: org.organisation.id });
    expect(Object.keys(mailed!)).not.toContain('commits');
  });
});
