// Must come first: the version is declared before the schema and the routes are built.
import { NEXT_VERSION } from '../support/next-version.ts';
import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { API_VERSIONS, CURRENT_VERSION } from '../../src/versions.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { createTestEndpoint, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * A version added by its declaration alone (test/support/next-version.ts renames
 * an event's `title` to `name`) reaches every surface: the version table, /v1 responses and
 * request bodies, /live, webhooks of endpoints pinned before it, and GraphQL's deprecated field.
 */

const app = useTestApp({ SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
/** The version before the fixture's: the last real one. */
const PREVIOUS = API_VERSIONS.at(-2)!.date;
/** A version before the one that added `sequence` to webhook payloads. */
const BEFORE_SEQUENCES = '2026-06-01';
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;
let catalogue: SeededCatalogue;
const paths: Record<string, string> = {};

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  org = await createOrganisation(app(), 'next');
  for (const version of [BEFORE_SEQUENCES, PREVIOUS, NEXT_VERSION]) {
    const target = { organisationId: org.organisation.id, accountId: org.account.id, receiver, apiVersion: version };
    paths[version] = (await createTestEndpoint(app().runtime.db, app().runtime.encryptionKey, target)).path;
  }
  catalogue = await seedCatalogue(app(), org);
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

const admin = (version?: string) => ({
  token: org.adminToken,
  org: org.slug,
  ...(version ? { headers: { 'service-version': version } } : {}),
});

it('is the current version, and the version table describes its change', async () => {
  expect(CURRENT_VERSION).toBe(NEXT_VERSION);
  const res = await api(app(), 'GET', '/v1/meta/versions');
  expect(res.body.current).toBe(NEXT_VERSION);
  const versions = res.body.versions as Array<{ date: string; status: string; breakingChanges: string[] }>;
  expect(versions.at(-1)).toMatchObject({ date: NEXT_VERSION, status: 'current', breakingChanges: ['Event: title renamed name'] });
  expect(versions.find((v) => v.date === PREVIOUS)?.status).toBe('supported');
});

it('takes a body in the previous shape, answers each version in its own shape, and sends each pinned endpoint its own', async () => {
  const created = await api(app(), 'POST', '/v1/events', {
    ...admin(PREVIOUS),
    body: { accountId: org.account.id, title: 'Written the old way', timezone: 'Europe/London' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body.event).toMatchObject({ title: 'Written the old way', venueId: null });
  expect(created.body.event).not.toHaveProperty('name');
  const id = created.body.event.id as string;

  const now = await api(app(), 'GET', `/v1/events/${id}`, admin());
  expect(now.body.event).toMatchObject({ name: 'Written the old way' });
  expect(now.body.event).not.toHaveProperty('title');
  // Further back: venueId's addition undone as well.
  const older = await api(app(), 'GET', `/v1/events/${id}`, admin('2025-10-01'));
  expect(older.body.event).toMatchObject({ title: 'Written the old way' });
  expect(older.body.event).not.toHaveProperty('venueId');
  expect(older.body.event).not.toHaveProperty('name');

  const renamed = await api(app(), 'PATCH', `/v1/events/${id}`, { ...admin(PREVIOUS), body: { title: 'Renamed the old way' } });
  expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  expect(renamed.body.event.title).toBe('Renamed the old way');

  const hooks = await receiver.waitForRequests(3, (r) => JSON.parse(r.rawBody).data.id === id, 60_000);
  const sent = (version: string) => JSON.parse(hooks.find((r) => r.path === paths[version])!.rawBody) as { version: string; data: object };
  // The event's first webhook: sequence 1, kept through the new version's step down, gone before 2026-11-27.
  expect(sent(PREVIOUS)).toMatchObject({ version: PREVIOUS, data: { id, title: 'Written the old way', sequence: 1 } });
  expect(sent(PREVIOUS).data).not.toHaveProperty('name');
  expect(sent(NEXT_VERSION)).toMatchObject({ version: NEXT_VERSION, data: { id, name: 'Written the old way', sequence: 1 } });
  expect(sent(NEXT_VERSION).data).not.toHaveProperty('title');
  for (const version of [PREVIOUS, NEXT_VERSION]) expect(Object.keys(sent(version).data).at(-1)).toBe('sequence');
  expect(sent(BEFORE_SEQUENCES)).toMatchObject({ version: BEFORE_SEQUENCES, data: { id, title: 'Written the old way', venueId: null } });
  expect(sent(BEFORE_SEQUENCES).data).not.toHaveProperty('sequence');
});

it('shapes the sales API too', async () => {
  const listings = (version: string) =>
    api(app(), 'GET', '/live/sales/listings', { headers: { 'x-channel-key': catalogue.channel.publishable, 'service-version': version } });
  const [old, current] = [(await listings(PREVIOUS)).body.events[0], (await listings(NEXT_VERSION)).body.events[0]];
  expect(old.title).toBe(current.name);
  expect(old).not.toHaveProperty('name');
  expect(current).not.toHaveProperty('title');
});

it('keeps the old name in GraphQL as a deprecated field naming the version', async () => {
  const res = await graphql(app(), 'query ($id: ID!) { event(id: $id) { name title } }', { id: catalogue.eventId }, admin(PREVIOUS));
  expect(res.body.errors).toBeUndefined();
  expect(res.body.data.event.title).toBe(res.body.data.event.name);
  for (const type of ['Event', 'ListingEvent']) {
    const introspection = await graphql(
      app(),
      `{ __type(name: "${type}") { fields(includeDeprecated: true) { name deprecationReason } } }`,
    );
    const title = (introspection.body.data.__type.fields as Array<{ name: string; deprecationReason: string }>).find(
      (f) => f.name === 'title',
    );
    expect(title?.deprecationReason).toBe(`Renamed name in API version ${NEXT_VERSION}.`);
  }
});
