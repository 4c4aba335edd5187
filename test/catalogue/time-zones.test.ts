import pg from 'pg';
import { expect, it } from 'vitest';
import { PG_ADMIN_URL } from '../support/env.ts';

/**
 * The events list filters by local date in SQL (`::date::timestamp AT TIME ZONE o.timezone`,
 * src/services/events.ts) while time zones are validated by Node's Intl (src/time-zones.ts): every
 * name Intl accepts and stores must be one PostgreSQL knows, or a filter would fail on that event.
 */
it('PostgreSQL knows every time zone Intl accepts, as the name the service stores', async () => {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    const known = new Set((await client.query<{ name: string }>('SELECT name FROM pg_timezone_names')).rows.map((row) => row.name));
    const stored = [...Intl.supportedValuesOf('timeZone'), 'UTC'].map(
      (zone) => new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone,
    );
    expect(stored.length).toBeGreaterThan(400);
    expect(stored.filter((zone) => !known.has(zone))).toEqual([]);
  } finally {
    await client.end();
  }
});
