import { beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
beforeAll(async () => {
  org = await createOrganisation(app, 'evwh');
});

it('creating an event records event.created with one delivery per subscribed endpoint, in the same transaction', async () => {
  const admin = { token: org.adminToken, org: org.slug };
  const endpoint = async (eventTypes?: string[]) =>
    (
      await api(app, 'POST', '/v1/webhook-endpoints', {
        ...admin,
        body: { accountId: org.account.id, url: 'http://127.0.0.1:9/hook', description: 'x', ...(eventTypes ? { eventTypes } : {}) },
      })
    ).body.endpoint.id as string;
  const all = await endpoint();
  const events = await endpoint(['event.created']);
  await endpoint(['order.created']);

  const created = await api(app, 'POST', '/v1/events', {
    ...admin,
    body: { accountId: org.account.id, name: 'Gala', timezone: 'Europe/Paris' },
  });
  expect(created.status).toBe(201);
  const sources = await query<{ id: string; type: string; payload: Record<string, unknown> }>(
    app,
    `SELECT id, type, payload FROM webhook_events WHERE type = 'event.created'`,
  );
  expect(sources).toHaveLength(1);
  expect(sources[0]!.id).toMatch(/^wev_/);
  expect(sources[0]!.payload).toEqual({
    id: created.body.event.id,
    name: 'Gala',
    status: 'draft',
    accountId: org.account.id,
    venueId: null,
    timezone: 'Europe/Paris',
    createdAt: created.body.event.createdAt,
  });
  const deliveries = await query<{ endpointId: string; eventId: string; status: string }>(
    app,
    `SELECT "endpointId", "eventId", status FROM webhook_deliveries WHERE "eventId" = $1`,
    [sources[0]!.id],
  );
  expect(deliveries.map((d) => d.endpointId).sort()).toEqual([all, events].sort());
  expect(deliveries.every((d) => d.status === 'pending')).toBe(true);

  const refused = await api(app, 'POST', '/v1/events', { ...admin, body: { accountId: org.account.id, name: '', timezone: 'UTC' } });
  expect(refused.status).toBe(400);
  const after = await query<{ count: string }>(app, `SELECT count(*) FROM webhook_events`);
  expect(after[0]!.count).toBe('1');
});

it('an event whose transaction fails at its commit leaves no source event and no delivery behind', async () => {
  const admin = { token: org.adminToken, org: org.slug };
  // A deferred check runs at COMMIT, after the event and its webhooks were written: the whole
  // transaction rolls back there. Webhooks recorded anywhere but in that transaction would stay.
  await query(
    app,
    `CREATE FUNCTION refuse_doomed_event() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.name = 'Doomed gala' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`,
  );
  await query(
    app,
    `CREATE CONSTRAINT TRIGGER doomed_event AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED
       FOR EACH ROW EXECUTE FUNCTION refuse_doomed_event()`,
  );
  const doomed = await api(app, 'POST', '/v1/events', {
    ...admin,
    body: { accountId: org.account.id, name: 'Doomed gala', timezone: 'UTC' },
  });
  expect(doomed.status).toBe(500);
  const left = await query<{ events: string; sources: string; deliveries: string }>(
    app,
    `SELECT (SELECT count(*) FROM events WHERE name = 'Doomed gala') AS events,
            (SELECT count(*) FROM webhook_events WHERE payload->>'name' = 'Doomed gala') AS sources,
            (SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e ON e.id = d."eventId" WHERE e.payload->>'name' = 'Doomed gala') AS deliveries`,
  );
  expect(left[0]).toEqual({ events: '0', sources: '0', deliveries: '0' });
});
