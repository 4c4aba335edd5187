import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { confirmOrder, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { createTestEndpoint, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Per-object sequence numbers (docs/spec/contract.md "Decided later (2026-11-26)"), as a partner
 * receives them: orders bought, confirmed, scanned, refunded and cancelled through the API, every
 * webhook delivered by the Temporal worker to a real receiver. An endpoint pinned to the current
 * version reads each event's place among its object's events in `data.sequence` (an order's order.*
 * and ticket.* events share one count); one pinned to 2026-06-01, the version before, gets the same
 * events without it.
 */

const app = useTestApp({ SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
const BEFORE_SEQUENCES = '2026-06-01';

let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;
let catalogue: SeededCatalogue;
/** Receiver paths of the two endpoints of the organisation's account. */
const paths = {} as Record<'current' | 'pinned', string>;

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver({ rejectUnverified: true });
  org = await createOrganisation(app(), 'sequences');
  catalogue = await seedCatalogue(app(), org);
  const pinnedTo = async (apiVersion: string) =>
    (
      await createTestEndpoint(app().runtime.db, app().runtime.encryptionKey, {
        organisationId: org.organisation.id,
        accountId: org.account.id,
        receiver,
        apiVersion,
      })
    ).path;
  paths.current = await pinnedTo(CURRENT_VERSION);
  paths.pinned = await pinnedTo(BEFORE_SEQUENCES);
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

interface Delivered {
  eventId: string;
  type: string;
  version: string;
  data: Record<string, unknown>;
}

function delivered(request: ReceivedRequest): Delivered {
  expect(request.verified, request.verificationError).toBe(true);
  const body = JSON.parse(request.rawBody) as { type: string; version: string; data: Record<string, unknown> };
  return { eventId: String(request.headers['service-event-id']), type: body.type, version: body.version, data: body.data };
}

/** Whether a webhook is about the order: its order.* events, its ticket.issued, a ticket.redeemed of one of its passes. */
const aboutOrder = (order: { id: string; passIds: string[] }) => (data: Record<string, unknown>) =>
  data.id === order.id || data.orderId === order.id || order.passIds.includes(String(data.passId));

/**
 * The `count` webhooks about the order each endpoint received, in order of their sequence at the
 * current version (ties, which must not happen, in arrival order); the pinned endpoint's listed in
 * the same order of events.
 */
async function webhooksOf(order: { id: string; passIds: string[] }, count: number) {
  const about = aboutOrder(order);
  const wait = (path: string) =>
    receiver.waitForRequests(count, (r) => r.path === path && r.status === 200 && about(JSON.parse(r.rawBody).data), 60_000);
  const [current, pinned] = await Promise.all([wait(paths.current), wait(paths.pinned)]);
  const atCurrent = current.map(delivered).sort((a, b) => Number(a.data.sequence) - Number(b.data.sequence));
  const atPinned = new Map(pinned.map(delivered).map((d) => [d.eventId, d]));
  expect(atCurrent).toHaveLength(count);
  expect(atPinned.size).toBe(count);
  return { current: atCurrent, pinned: atCurrent.map((d) => atPinned.get(d.eventId)!) };
}

/** What 2026-11-27 added besides `sequence` (src/versions.ts): a redemption names its pass's order. */
const ALSO_ADDED: Record<string, string[]> = { 'ticket.redeemed': ['orderId'] };

/** The pinned endpoint got the same events, each the current one's data without what 2026-11-27 added; nothing else changed. */
function expectSameWithoutSequence(current: Delivered[], pinned: Delivered[]) {
  expect(pinned.map((d) => d?.eventId)).toEqual(current.map((d) => d.eventId));
  for (const [index, event] of current.entries()) {
    const older = Object.fromEntries(
      Object.entries(event.data).filter(([key]) => key !== 'sequence' && !(ALSO_ADDED[event.type] ?? []).includes(key)),
    );
    expect(pinned[index]!.version).toBe(BEFORE_SEQUENCES);
    expect(pinned[index]!.data).not.toHaveProperty('sequence');
    expect(pinned[index]!.data).toEqual(older);
  }
}

/** What the current endpoint received about the customer. */
async function webhooksOfCustomer(customerId: string) {
  const about = (r: ReceivedRequest) => r.path === paths.current && JSON.parse(r.rawBody).data.id === customerId;
  return (await receiver.waitForRequests(1, about, 60_000)).map(delivered);
}

async function passIdsOf(orderId: string) {
  const passes = await app().runtime.db.pass.findMany({ where: { orderId }, orderBy: { id: 'asc' }, select: { id: true } });
  return passes.map((p) => p.id);
}

it("numbers an order's events 1, 2, 3, ... in the order they happened, redemptions included; 2026-06-01 gets none", async () => {
  const placed = await placeOrder(app(), catalogue.channel, catalogue, { quantity: 2 });
  const order = { id: placed.order.id, passIds: placed.passes.map((p) => p.id) };
  expect(order.passIds).toHaveLength(2);
  const scanned = await api(app(), 'POST', `/v1/passes/${order.passIds[0]}/redeem`, asAdmin(org));
  expect(scanned.status, JSON.stringify(scanned.body)).toBe(201);
  const refunded = await api(app(), 'POST', `/v1/orders/${order.id}/refund`, asAdmin(org));
  expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);

  const { current, pinned } = await webhooksOf(order, 5);
  expect(current.map((d) => [d.type, d.data.sequence])).toEqual([
    ['order.created', 1],
    ['order.confirmed', 2],
    ['ticket.issued', 3],
    ['ticket.redeemed', 4],
    ['order.refunded', 5],
  ]);
  for (const event of current) {
    expect(event.version).toBe(CURRENT_VERSION);
    // Last, after the resource's own fields.
    expect(Object.keys(event.data).at(-1)).toBe('sequence');
  }
  expect(current[3]!.data).toMatchObject({ passId: order.passIds[0], orderId: order.id, redemptionId: scanned.body.redemption.id });
  expectSameWithoutSequence(current, pinned);

  // The source events as recorded: each names its order as its object, whatever its payload carries.
  const rows = await query<{ type: string; objectId: string; sequence: number }>(
    app(),
    `SELECT type, "objectId", sequence FROM webhook_events WHERE id = ANY($1) ORDER BY sequence`,
    [current.map((d) => d.eventId)],
  );
  expect(rows).toEqual(current.map((d) => ({ type: d.type, objectId: order.id, sequence: d.data.sequence })));

  // The buyer, an object of its own: its first event.
  const [customer] = await webhooksOfCustomer(placed.order.customerId);
  expect(customer).toMatchObject({ type: 'customer.created', data: { id: placed.order.customerId, sequence: 1 } });
});

it('counts each order on its own, from 1, however their events interleave', async () => {
  const first = await placeOrder(app(), catalogue.channel, catalogue, { pending: true });
  const second = await placeOrder(app(), catalogue.channel, catalogue, { pending: true });
  await confirmOrder(app(), catalogue.channel.secret, first.order.id);
  const cancelled = await api(app(), 'POST', `/v1/orders/${second.order.id}/cancel`, asAdmin(org));
  expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
  const refunded = await api(app(), 'POST', `/v1/orders/${first.order.id}/refund`, asAdmin(org));
  expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);

  const a = await webhooksOf({ id: first.order.id, passIds: await passIdsOf(first.order.id) }, 4);
  expect(a.current.map((d) => [d.type, d.data.sequence])).toEqual([
    ['order.created', 1],
    ['order.confirmed', 2],
    ['ticket.issued', 3],
    ['order.refunded', 4],
  ]);
  expectSameWithoutSequence(a.current, a.pinned);
  const b = await webhooksOf({ id: second.order.id, passIds: [] }, 2);
  expect(b.current.map((d) => [d.type, d.data.sequence])).toEqual([
    ['order.created', 1],
    ['order.cancelled', 2],
  ]);
  expectSameWithoutSequence(b.current, b.pinned);
});

it('hands two redemptions of one order, committed at once, two numbers: never the same one twice', async () => {
  const placed = await placeOrder(app(), catalogue.channel, catalogue, { quantity: 2 });
  const order = { id: placed.order.id, passIds: placed.passes.map((p) => p.id) };
  const scans = await Promise.all(order.passIds.map((id) => api(app(), 'POST', `/v1/passes/${id}/redeem`, asAdmin(org))));
  expect(scans.map((s) => s.status)).toEqual([201, 201]);

  const { current, pinned } = await webhooksOf(order, 5);
  expect(current.map((d) => d.data.sequence)).toEqual([1, 2, 3, 4, 5]);
  expect(current.slice(3).map((d) => d.type)).toEqual(['ticket.redeemed', 'ticket.redeemed']);
  expect(new Set(current.slice(3).map((d) => d.data.passId))).toEqual(new Set(order.passIds));
  expectSameWithoutSequence(current, pinned);
  const [last] = await query<{ last: number }>(
    app(),
    `SELECT last FROM webhook_sequences WHERE "organisationId" = $1 AND "objectId" = $2`,
    [org.organisation.id, order.id],
  );
  expect(last).toEqual({ last: 5 });
});
