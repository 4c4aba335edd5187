import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { pruneAuditEntries } from '../../src/services/audit.ts';
import { newId } from '../../src/ids.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, createApiKey, customRole, staffWithoutRights } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, createStaffUser, graphql, tag, type TestOrganisation } from '../support/fixtures.ts';
import { mailedInvitationCode } from '../support/mail.ts';
import { placeOrder, seedCatalogue } from '../support/sales.ts';
import { recordTestEvent } from '../support/webhook-receiver.ts';
import { auditEntriesOf, type EntryRow } from '../support/audit.ts';

/**
 * The audit log (src/services/audit.ts, docs/api.md "Audit log"): every change to the
 * organisation's configuration and money writes one entry in its own transaction, naming who,
 * what, before and after, and from where, never a secret; the log reads through GraphQL and /v1
 * under audit.read; the database refuses to change or delete an entry except the pruning.
 */

// Identity providers at a loopback issuer: nothing is fetched from it, but its host must resolve.
const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let org: TestOrganisation;
const admin = () => asAdmin(org);
const CLIENT = { 'user-agent': 'audit-test/1.0', 'x-forwarded-for': '198.18.7.7' };

/** Every secret a test below was handed or stored: none may appear in any entry. */
const secrets: string[] = [];

beforeAll(async () => {
  org = await createOrganisation(app, 'audit');
});

function entriesOf(targetId: string, action?: string): Promise<EntryRow[]> {
  return auditEntriesOf(app, org.organisation.id, targetId, action);
}

/** The one entry of `action` about `targetId`; fails when there is none or more than one. */
async function theEntry(targetId: string, action: string): Promise<EntryRow> {
  const rows = await entriesOf(targetId, action);
  expect(rows, `${action} of ${targetId}`).toHaveLength(1);
  return rows[0]!;
}

const byAdmin = { actorKind: 'user', actorId: () => org.user.id };
function expectAdmin(entry: EntryRow) {
  expect(entry.actorKind).toBe(byAdmin.actorKind);
  expect(entry.actorId).toBe(byAdmin.actorId());
}

async function ok(res: { status: number; body: any }, status = 200) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}

describe('every change writes one entry in its own transaction', () => {
  it('records the actor, the request id, the client address and the user agent of the request', async () => {
    const res = await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: 'Audited account' }, headers: CLIENT });
    const { account } = await ok(res, 201);
    const entry = await theEntry(account.id, 'account.created');
    expectAdmin(entry);
    expect(entry).toMatchObject({
      organisationId: org.organisation.id,
      accountId: account.id,
      targetType: 'account',
      requestId: res.headers.get('x-request-id'),
      clientAddress: '198.18.7.7',
      userAgent: 'audit-test/1.0',
    });
    expect(entry.changes.name).toEqual({ before: null, after: 'Audited account' });
  });

  it('accounts: created, updated (before and after), deleted', async () => {
    const { account } = await ok(await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: 'Box office' } }), 201);
    await ok(await api(app, 'PATCH', `/v1/accounts/${account.id}`, { ...admin(), body: { name: 'Front desk', status: 'inactive' } }));
    const updated = await theEntry(account.id, 'account.updated');
    expectAdmin(updated);
    expect(updated.changes).toEqual({
      name: { before: 'Box office', after: 'Front desk' },
      status: { before: 'active', after: 'inactive' },
    });
    await ok(await api(app, 'DELETE', `/v1/accounts/${account.id}`, admin()));
    expect((await theEntry(account.id, 'account.deleted')).changes).toEqual({ isDeleted: { before: false, after: true } });
  });

  it('organisation settings: one entry of the organisation as a whole', async () => {
    await ok(await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { name: 'Renamed org', primaryColor: '#112233' } }));
    const entry = await theEntry(org.organisation.id, 'organisation.updated');
    expectAdmin(entry);
    expect(entry.accountId).toBeNull();
    expect(entry.changes).toEqual({
      name: { before: `Org ${org.slug}`, after: 'Renamed org' },
      primaryColor: { before: null, after: '#112233' },
    });
  });

  it('roles and role assignments: created, updated, replaced, removed, deleted', async () => {
    const role = await ok(
      await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: 'Door staff', permissions: ['events.read'] } }),
      201,
    );
    expect((await theEntry(role.id, 'role.created')).changes.permissions).toEqual({ before: null, after: ['events.read'] });
    await ok(await api(app, 'PATCH', `/v1/roles/${role.id}`, { ...admin(), body: { permissions: ['events.read', 'passes.redeem'] } }));
    expect((await theEntry(role.id, 'role.updated')).changes).toEqual({
      permissions: { before: ['events.read'], after: ['events.read', 'passes.redeem'] },
    });

    const staff = await staffWithoutRights(app, org, 'assignee');
    const { assignment } = await ok(
      await api(app, 'POST', '/v1/user-account-roles', {
        ...admin(),
        body: { userId: staff.userId, accountId: org.account.id, roleId: role.id },
      }),
      201,
    );
    const assigned = await theEntry(assignment.id, 'role_assignment.created');
    expectAdmin(assigned);
    expect(assigned).toMatchObject({ accountId: org.account.id, targetType: 'role_assignment' });
    expect(assigned.changes).toEqual({
      userId: { before: null, after: staff.userId },
      accountId: { before: null, after: org.account.id },
      roleId: { before: null, after: role.id },
    });

    const viewer = org.roles.find((r) => r.systemKey === 'viewer')!.id;
    const { assignments } = await ok(
      await api(app, 'PUT', '/v1/user-account-roles', {
        ...admin(),
        body: { userId: staff.userId, accountId: org.account.id, roleIds: [viewer] },
      }),
    );
    await theEntry(assignment.id, 'role_assignment.deleted');
    await theEntry(assignments[0].id, 'role_assignment.created');

    await ok(await api(app, 'DELETE', `/v1/user-account-roles/${assignments[0].id}`, admin()));
    expect((await entriesOf(assignments[0].id)).map((e) => e.action)).toEqual(['role_assignment.created', 'role_assignment.deleted']);

    await ok(await api(app, 'DELETE', `/v1/roles/${role.id}`, admin()));
    await theEntry(role.id, 'role.deleted');
  });

  it('invitations: created, resent, deleted, and redeemed by the user it made', async () => {
    const email = `invitee-${tag()}@audit.test`;
    const { invitation } = await ok(
      await api(app, 'POST', '/v1/user-invitations', { ...admin(), body: { organisationId: org.organisation.id, email } }),
      201,
    );
    secrets.push(await mailedInvitationCode(app, invitation.id));
    const created = await theEntry(invitation.id, 'invitation.created');
    expect(created.changes.email).toEqual({ before: null, after: email });
    expect(created.changes.codeHash).toEqual({ changed: true });

    await ok(await api(app, 'POST', `/v1/user-invitations/${invitation.id}/resend`, { ...admin(), body: {} }));
    const code = await mailedInvitationCode(app, invitation.id);
    secrets.push(code, 'a new password 1');
    const resent = await theEntry(invitation.id, 'invitation.resent');
    expect(resent.changes.codeHash).toEqual({ changed: true });

    await ok(await api(app, 'POST', '/v1/auth/invitations/redeem', { body: { code, password: 'a new password 1' } }));
    const redeemed = await theEntry(invitation.id, 'invitation.redeemed');
    const [user] = await query<{ id: string }>(app, 'SELECT id FROM users WHERE "organisationId" = $1 AND email = $2', [
      org.organisation.id,
      email,
    ]);
    expect(redeemed).toMatchObject({ actorKind: 'user', actorId: user!.id });
    expect(redeemed.changes.userStatus).toEqual({ before: 'pending', after: 'active' });

    const other = await ok(
      await api(app, 'POST', '/v1/user-invitations', {
        ...admin(),
        body: { organisationId: org.organisation.id, email: `gone-${tag()}@audit.test` },
      }),
      201,
    );
    await ok(await api(app, 'DELETE', `/v1/user-invitations/${other.invitation.id}`, admin()));
    await theEntry(other.invitation.id, 'invitation.deleted');
  });

  it('identity providers: created and updated; their configuration, whatever its keys are named, is only said to have changed', async () => {
    const host = `http://127.0.0.1:9/id-${tag()}`;
    const clientSecret = `client-secret-${tag()}`;
    secrets.push(clientSecret);
    const { provider } = await ok(
      await api(app, 'POST', '/v1/identity-providers', {
        ...admin(),
        body: { providerType: 'oidc', issuer: host, jwksUri: `${host}/jwks`, clientId: 'ticketing', configuration: { clientSecret } },
      }),
      201,
    );
    const created = await theEntry(provider.id, 'identity_provider.created');
    expect(created.accountId).toBeNull();
    expect(created.changes.issuer).toEqual({ before: null, after: host });
    expect(created.changes.configuration).toEqual({ changed: true });
    await ok(await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, { ...admin(), body: { cacheTtl: 60 } }));
    expect((await theEntry(provider.id, 'identity_provider.updated')).changes).toEqual({ cacheTtl: { before: 600, after: 60 } });
    // A private key and a password kept under names no rule could guess, after a configuration
    // that held none.
    await ok(
      await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, { ...admin(), body: { configuration: { prompt: 'login' } } }),
    );
    const exponent = `private-exponent-${tag()}`;
    const passwd = `passwd-${tag()}`;
    secrets.push(exponent, passwd);
    await ok(
      await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, {
        ...admin(),
        body: { configuration: { private_jwk: { kty: 'RSA', d: exponent }, passwd } },
      }),
    );
    const [updated] = (await api(app, 'GET', `/v1/audit-entries?targetId=${provider.id}&action=identity_provider.updated`, admin())).body
      .auditEntries;
    expect(JSON.stringify(updated)).not.toContain(exponent);
    expect(updated.changes).toEqual([{ field: 'configuration', before: null, after: null, secret: true }]);
  });

  it('API keys and embed sessions: the key is an actor of its own, and so is the embed session it mints', async () => {
    const { key, apiKey } = await createApiKey(app, org, ['events.read', 'events.write'], { accountId: org.account.id });
    secrets.push(key);
    const created = await theEntry(apiKey.id, 'api_key.created');
    expectAdmin(created);
    expect(created.changes.keyHash).toEqual({ changed: true });
    expect(created.changes.scopes).toEqual({ before: null, after: ['events.read', 'events.write'] });

    const session = await ok(
      await api(app, 'POST', '/v1/embed/sessions', { ...as(key, org), body: { accountId: org.account.id, scopes: ['events.write'] } }),
      201,
    );
    secrets.push(session.token);
    const [minted] = await query<EntryRow>(
      app,
      `SELECT * FROM audit_entries WHERE "organisationId" = $1 AND action = 'embed_session.created'`,
      [org.organisation.id],
    );
    expect(minted).toMatchObject({ actorKind: 'api_key', actorId: apiKey.id, accountId: org.account.id, targetType: 'embed_session' });

    const { event } = await ok(
      await api(app, 'POST', '/v1/events', { ...admin(), body: { accountId: org.account.id, name: 'Embedded', timezone: 'UTC' } }),
      201,
    );
    await ok(await api(app, 'PATCH', `/v1/events/${event.id}`, { ...as(session.token, org), body: { name: 'Renamed in the widget' } }));
    const updated = await theEntry(event.id, 'event.updated');
    expect(updated).toMatchObject({ actorKind: 'embed_session', actorId: minted!.targetId, accountId: org.account.id });
    expect(updated.changes.name).toEqual({ before: 'Embedded', after: 'Renamed in the widget' });

    await ok(await api(app, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, admin()));
    expect((await theEntry(apiKey.id, 'api_key.revoked')).changes.revokedAt).toMatchObject({ before: null });
  });

  it('sales channels and channel keys: created, updated, key issued and revoked', async () => {
    const { salesChannel } = await ok(
      await api(app, 'POST', '/v1/sales-channels', {
        ...admin(),
        body: { accountId: org.account.id, name: 'Shop', slug: `shop-${tag()}` },
      }),
      201,
    );
    await theEntry(salesChannel.id, 'sales_channel.created');
    await ok(await api(app, 'PATCH', `/v1/sales-channels/${salesChannel.id}`, { ...admin(), body: { isActive: false } }));
    expect((await theEntry(salesChannel.id, 'sales_channel.updated')).changes).toEqual({ isActive: { before: true, after: false } });
    const issued = await ok(
      await api(app, 'POST', `/v1/sales-channels/${salesChannel.id}/keys`, { ...admin(), body: { kind: 'secret' } }),
      201,
    );
    secrets.push(issued.key);
    const created = await theEntry(issued.channelKey.id, 'channel_key.created');
    expect(created).toMatchObject({ accountId: org.account.id, targetType: 'channel_key' });
    expect(created.changes.keyHash).toEqual({ changed: true });
    await ok(await api(app, 'POST', `/v1/sales-channels/${salesChannel.id}/keys/${issued.channelKey.id}/revoke`, { ...admin(), body: {} }));
    await theEntry(issued.channelKey.id, 'channel_key.revoked');
  });

  it('webhook endpoints and their operations: created, updated, disabled, enabled, secret rotated, tested, recovered, resent, deleted', async () => {
    const created = await ok(
      await api(app, 'POST', '/v1/webhook-endpoints', {
        ...admin(),
        body: { accountId: org.account.id, url: `http://127.0.0.1:9/audit-${tag()}`, eventTypes: ['event.created'] },
      }),
      201,
    );
    secrets.push(created.secret);
    const id = created.endpoint.id as string;
    expect((await theEntry(id, 'webhook_endpoint.created')).changes.secretCiphertext).toEqual({ changed: true });

    await ok(await api(app, 'PATCH', `/v1/webhook-endpoints/${id}`, { ...admin(), body: { description: 'Partner' } }));
    expect((await theEntry(id, 'webhook_endpoint.updated')).changes).toEqual({ description: { before: null, after: 'Partner' } });
    await ok(await api(app, 'PATCH', `/v1/webhook-endpoints/${id}`, { ...admin(), body: { enabled: false } }));
    expect((await theEntry(id, 'webhook_endpoint.disabled')).changes.enabled).toEqual({ before: true, after: false });
    await ok(await api(app, 'PATCH', `/v1/webhook-endpoints/${id}`, { ...admin(), body: { enabled: true } }));
    await theEntry(id, 'webhook_endpoint.enabled');

    const rotated = await ok(
      await api(app, 'POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { ...admin(), body: { overlapSeconds: 60 } }),
    );
    secrets.push(rotated.secret);
    const rotation = await theEntry(id, 'webhook_endpoint.secret_rotated');
    expect(rotation.changes.secretCiphertext).toEqual({ changed: true });
    expect(rotation.changes.previousSecretCiphertext).toEqual({ changed: true });

    const tested = await api(app, 'POST', `/v1/webhook-endpoints/${id}/test`, { ...admin(), body: {} });
    expect(tested.status, JSON.stringify(tested.body)).toBeLessThan(300);
    expect((await theEntry(id, 'webhook_endpoint.tested')).changes.deliveryId).toEqual({ before: null, after: tested.body.delivery.id });

    const recovered = await api(app, 'POST', `/v1/webhook-endpoints/${id}/recover`, {
      ...admin(),
      body: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(recovered.status, JSON.stringify(recovered.body)).toBeLessThan(300);
    await theEntry(id, 'webhook_endpoint.recovered');

    const { eventId } = await recordTestEvent(app().runtime.db, {
      organisationId: org.organisation.id,
      accountId: org.account.id,
      type: 'event.created',
      payload: views.event({
        id: newId('event'),
        name: 'Resent',
        status: 'draft',
        accountId: org.account.id,
        venueId: null,
        timezone: 'UTC',
        createdAt: new Date(),
      }),
    });
    const [delivery] = await query<{ id: string }>(app, 'SELECT id FROM webhook_deliveries WHERE "eventId" = $1 AND "endpointId" = $2', [
      eventId,
      id,
    ]);
    const resent = await api(app, 'POST', `/v1/webhook-deliveries/${delivery!.id}/resend`, { ...admin(), body: {} });
    expect(resent.status, JSON.stringify(resent.body)).toBeLessThan(300);
    expect(await theEntry(delivery!.id, 'webhook_delivery.resent')).toMatchObject({
      accountId: org.account.id,
      targetType: 'webhook_delivery',
    });

    await ok(await api(app, 'DELETE', `/v1/webhook-endpoints/${id}`, admin()));
    expect((await theEntry(id, 'webhook_endpoint.deleted')).changes.deletedAt).toMatchObject({ before: null });
  });

  it('events with their occurrences and ticket types, and venues', async () => {
    const { venue } = await ok(
      await api(app, 'POST', '/v1/venues', { ...admin(), body: { accountId: org.account.id, name: 'Hall' } }),
      201,
    );
    await theEntry(venue.id, 'venue.created');
    await ok(await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...admin(), body: { city: 'Leeds' } }));
    expect((await theEntry(venue.id, 'venue.updated')).changes).toEqual({ city: { before: null, after: 'Leeds' } });

    const { event } = await ok(
      await api(app, 'POST', '/v1/events', { ...admin(), body: { accountId: org.account.id, name: 'Gig', timezone: 'Europe/London' } }),
      201,
    );
    const created = await theEntry(event.id, 'event.created');
    expect(created.changes.name).toEqual({ before: null, after: 'Gig' });
    await ok(await api(app, 'PATCH', `/v1/events/${event.id}`, { ...admin(), body: { name: 'Big gig' } }));
    expect((await theEntry(event.id, 'event.updated')).changes).toEqual({ name: { before: 'Gig', after: 'Big gig' } });

    const { eventOccurrence } = await ok(
      await api(app, 'POST', `/v1/events/${event.id}/occurrences`, { ...admin(), body: { startDate: '2031-05-01', startTime: '19:30' } }),
      201,
    );
    expect((await theEntry(eventOccurrence.id, 'event_occurrence.created')).changes.startsAt).toEqual({
      before: null,
      after: '2031-05-01T18:30:00.000Z',
    });

    const { ticketType } = await ok(
      await api(app, 'POST', `/v1/events/${event.id}/ticket-types`, {
        ...admin(),
        body: { name: 'Standing', priceAmount: 2500, currency: 'GBP' },
      }),
      201,
    );
    await theEntry(ticketType.id, 'ticket_type.created');
    await ok(await api(app, 'PATCH', `/v1/ticket-types/${ticketType.id}`, { ...admin(), body: { priceAmount: 3000 } }));
    expect((await theEntry(ticketType.id, 'ticket_type.updated')).changes).toEqual({ priceAmount: { before: 2500, after: 3000 } });
    const deleted = await graphql(app, 'mutation($id: ID!) { deleteTicketType(id: $id) { deletedId } }', { id: ticketType.id }, admin());
    expect(deleted.body.data.deleteTicketType.deletedId).toBe(ticketType.id);
    await theEntry(ticketType.id, 'ticket_type.deleted');

    await ok(await api(app, 'DELETE', `/v1/events/${event.id}`, admin()));
    await theEntry(event.id, 'event.deleted');
  });

  it('orders: a cancellation and a refund, with the money that left the revenue', async () => {
    const catalogue = await seedCatalogue(app, org);
    const paid = await placeOrder(app, catalogue.channel, catalogue);
    await ok(await api(app, 'POST', `/v1/orders/${paid.order.id}/refund`, { ...admin(), body: {} }));
    const refunded = await theEntry(paid.order.id, 'order.refunded');
    expectAdmin(refunded);
    expect(refunded.changes.status).toEqual({ before: 'confirmed', after: 'refunded' });
    expect(refunded.changes.revenue).toEqual({ before: { amount: 2500, currency: 'GBP' }, after: { amount: 0, currency: 'GBP' } });

    const pending = await placeOrder(app, catalogue.channel, catalogue, { pending: true });
    await ok(await api(app, 'POST', `/v1/orders/${pending.order.id}/cancel`, { ...admin(), body: {} }));
    const cancelled = await theEntry(pending.order.id, 'order.cancelled');
    expect(cancelled.changes.status).toEqual({ before: 'pending', after: 'cancelled' });
    expect(cancelled.changes.revenue).toEqual({ before: { amount: 0, currency: 'GBP' }, after: { amount: 0, currency: 'GBP' } });
  });

  it('writes no entry for a change that fails inside its transaction (the last administrator is kept)', async () => {
    // The assignment is removed and its entry written, then the check of the last administrator
    // refuses: the whole transaction rolls back, entry included.
    const res = await api(app, 'DELETE', `/v1/user-account-roles/${org.assignment.id}`, admin());
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(await entriesOf(org.assignment.id)).toEqual([]);
    expect(await query(app, 'SELECT id FROM role_assignments WHERE id = $1', [org.assignment.id])).toHaveLength(1);
  });

  it('never holds a secret: keys, codes, signing and client secrets, nor their hashes and ciphertexts', async () => {
    const stored = await query<{ value: string }>(
      app,
      `SELECT "keyHash" AS value FROM api_keys WHERE "organisationId" = $1
       UNION ALL SELECT "keyHash" FROM channel_keys WHERE "organisationId" = $1
       UNION ALL SELECT "codeHash" FROM invitations WHERE "organisationId" = $1
       UNION ALL SELECT "secretCiphertext" FROM webhook_endpoints WHERE "organisationId" = $1`,
      [org.organisation.id],
    );
    const [log] = await query<{ text: string }>(
      app,
      `SELECT coalesce(json_agg(a)::text, '') AS text FROM audit_entries a WHERE "organisationId" = $1`,
      [org.organisation.id],
    );
    const everything = [...secrets, ...secrets.map((s) => createHash('sha256').update(s).digest('hex')), ...stored.map((row) => row.value)];
    for (const secret of everything) expect(log!.text.includes(secret), `an entry holds ${secret.slice(0, 12)}…`).toBe(false);
    // The tests above handed over an invitation code, a password, a client secret, key material and signing secrets.
    expect(secrets.length).toBeGreaterThanOrEqual(8);
  });
});

describe('reading the log', () => {
  let reader: TestOrganisation;
  let second: { id: string };
  let keyId: string;
  let between: { from: string; to: string };

  beforeAll(async () => {
    reader = await createOrganisation(app, 'auditread');
    second = await createAccount(app, reader, 'Second');
    // Changes on the first account by the admin, one by an API key, one on the second account, one of the organisation.
    const { key, apiKey } = await createApiKey(app, reader, ['events.write', 'events.read']);
    keyId = apiKey.id;
    for (const name of ['One', 'Two', 'Three']) {
      await ok(
        await api(app, 'POST', '/v1/events', { ...asAdmin(reader), body: { accountId: reader.account.id, name, timezone: 'UTC' } }),
        201,
      );
    }
    const from = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await ok(
      await api(app, 'POST', '/v1/events', { ...as(key, reader), body: { accountId: second.id, name: 'By key', timezone: 'UTC' } }),
      201,
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    between = { from, to: new Date().toISOString() };
    await ok(await api(app, 'PATCH', '/v1/organisation', { ...asAdmin(reader), body: { name: 'Reader org' } }));
  });

  const ENTRY = 'id accountId actorKind actorId action targetType targetId changes requestId clientAddress userAgent createdAt';

  it('pages through GraphQL with cursors, newest first, without repeating or skipping', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let total = 0;
    for (let i = 0; i < 10; i += 1) {
      const res: any = await graphql(
        app,
        `
          query ($after: String) {
            auditEntries(first: 2, after: $after) {
              nodes {
                id
                createdAt
              }
              pageInfo {
                hasNextPage
                endCursor
              }
              pagination {
                total
              }
            }
          }
        `,
        { after },
        asAdmin(reader),
      );
      const page = res.body.data.auditEntries;
      total = page.pagination.total;
      seen.push(...page.nodes.map((n: { id: string }) => n.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    const [count] = await query<{ n: number }>(app, 'SELECT count(*)::int AS n FROM audit_entries WHERE "organisationId" = $1', [
      reader.organisation.id,
    ]);
    expect(total).toBe(count!.n);
    expect(seen).toHaveLength(count!.n);
    expect(new Set(seen).size).toBe(seen.length);
    const [newest] = await query<{ id: string }>(
      app,
      'SELECT id FROM audit_entries WHERE "organisationId" = $1 ORDER BY "createdAt" DESC, id DESC LIMIT 1',
      [reader.organisation.id],
    );
    expect(seen[0]).toBe(newest!.id);
  });

  it('filters through GraphQL by actor, target, action and time', async () => {
    const ask = async (args: string) => {
      const res = await graphql(app, `{ auditEntries(first: 50, ${args}) { nodes { ${ENTRY} } } }`, {}, asAdmin(reader));
      expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
      return res.body.data.auditEntries.nodes as any[];
    };
    const byKey = await ask(`actorKind: API_KEY, actorId: "${keyId}"`);
    expect(byKey.map((e) => [e.action, e.actorKind, e.accountId])).toEqual([['event.created', 'API_KEY', second.id]]);
    const target = byKey[0].targetId;
    expect((await ask(`targetType: "event", targetId: "${target}"`)).map((e) => e.id)).toEqual([byKey[0].id]);
    expect((await ask('action: "event.created"')).length).toBe(4);
    expect((await ask(`createdFrom: "${between.from}", createdTo: "${between.to}"`)).map((e) => e.id)).toEqual([byKey[0].id]);
    const organisationWide = await ask('action: "organisation.updated"');
    expect(organisationWide).toHaveLength(1);
    expect(organisationWide[0]).toMatchObject({ accountId: null, targetType: 'organisation', changes: { name: { after: 'Reader org' } } });
    const refused = await graphql(app, '{ auditEntries(action: "event.exploded") { nodes { id } } }', {}, asAdmin(reader));
    expect(refused.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
  });

  it('pages and filters on /v1 in the contract shape', async () => {
    const first = await ok(await api(app, 'GET', '/v1/audit-entries?limit=2', asAdmin(reader)));
    expect(first.auditEntries).toHaveLength(2);
    expect(first.pagination).toMatchObject({ page: 1, limit: 2, hasNext: true, hasPrev: false });
    const second_ = await ok(await api(app, 'GET', '/v1/audit-entries?limit=2&page=2', asAdmin(reader)));
    expect(second_.auditEntries.map((e: any) => e.id)).not.toContain(first.auditEntries[0].id);

    const byKey = await ok(await api(app, 'GET', `/v1/audit-entries?actorType=api_key&actorId=${keyId}`, asAdmin(reader)));
    expect(byKey.auditEntries).toHaveLength(1);
    const [entry] = byKey.auditEntries;
    expect(entry).toMatchObject({
      organisationId: reader.organisation.id,
      accountId: second.id,
      actor: { type: 'api_key', id: keyId },
      action: 'event.created',
      target: { type: 'event' },
    });
    expect(entry.changes).toContainEqual({ field: 'name', before: null, after: 'By key', secret: false });

    const byTarget = await ok(await api(app, 'GET', `/v1/audit-entries?targetType=event&targetId=${entry.target.id}`, asAdmin(reader)));
    expect(byTarget.auditEntries.map((e: any) => e.id)).toEqual([entry.id]);
    const byAction = await ok(await api(app, 'GET', '/v1/audit-entries?action=organisation.updated', asAdmin(reader)));
    expect(byAction.auditEntries.map((e: any) => e.action)).toEqual(['organisation.updated']);
    const byTime = await ok(
      await api(
        app,
        'GET',
        `/v1/audit-entries?from=${encodeURIComponent(between.from)}&to=${encodeURIComponent(between.to)}`,
        asAdmin(reader),
      ),
    );
    expect(byTime.auditEntries.map((e: any) => e.id)).toEqual([entry.id]);
    const keyEntry = await ok(await api(app, 'GET', `/v1/audit-entries?action=api_key.created&targetId=${keyId}`, asAdmin(reader)));
    expect(keyEntry.auditEntries[0].changes).toContainEqual({ field: 'keyHash', before: null, after: null, secret: true });

    const wrong = await api(app, 'GET', '/v1/audit-entries?actorType=robot', asAdmin(reader));
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0].path).toBe('query.actorType');
    const badTime = await api(app, 'GET', '/v1/audit-entries?from=yesterday', asAdmin(reader));
    expect(badTime.status).toBe(400);
    expect(badTime.body.details[0].path).toBe('query.from');
  });

  it('refuses a time range with a bound that is not an instant as VALIDATION_FAILED naming it, beside a valid bound', async () => {
    const res = await api(app, 'GET', '/v1/audit-entries?from=0020-02-29T00%3A00%3A00Z&to=null', asAdmin(reader));
    expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(res.body.details).toEqual([expect.objectContaining({ path: 'query.to' })]);
  });

  it('refuses a caller without audit.read with the contract code', async () => {
    const nobody = await staffWithoutRights(app, reader);
    const staff = await api(app, 'GET', '/v1/audit-entries', as(nobody.token, reader));
    expect([staff.status, staff.body.code]).toEqual([403, 'FORBIDDEN']);
    const { key } = await createApiKey(app, reader, ['events.read']);
    const keyed = await api(app, 'GET', '/v1/audit-entries', as(key, reader));
    expect([keyed.status, keyed.body.code]).toEqual([404, 'NOT_FOUND']);
    const graph = await graphql(app, '{ auditEntries { nodes { id } } }', {}, as(nobody.token, reader));
    expect(graph.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('shows one who holds audit.read on one account only that account, and the organisation-wide entries only with it on every account', async () => {
    const role = await customRole(app, reader, ['audit.read']);
    const auditor = await createStaffUser(app, reader, [{ roleId: role.id, accountId: second.id }], 'auditor');
    const seen = await ok(await api(app, 'GET', '/v1/audit-entries?limit=100', as(auditor.token, reader)));
    expect(seen.auditEntries.length).toBeGreaterThan(0);
    expect(seen.auditEntries.every((e: any) => e.accountId === second.id)).toBe(true);

    const [elsewhere] = await query<{ id: string }>(
      app,
      `SELECT id FROM audit_entries WHERE "organisationId" = $1 AND "accountId" = $2 LIMIT 1`,
      [reader.organisation.id, reader.account.id],
    );
    const one = await graphql(app, 'query($id: ID!) { auditEntry(id: $id) { id } }', { id: elsewhere!.id }, as(auditor.token, reader));
    expect(one.body.errors[0].extensions.code).toBe('NOT_FOUND');

    const everywhere = await customRole(app, reader, ['audit.read:all']);
    const chief = await createStaffUser(app, reader, [{ roleId: everywhere.id, accountId: second.id }], 'chief');
    const all = await ok(await api(app, 'GET', '/v1/audit-entries?action=organisation.updated', as(chief.token, reader)));
    expect(all.auditEntries).toHaveLength(1);
    const node = await graphql(
      app,
      'query($id: ID!) { node(id: $id) { ... on AuditEntry { action } } }',
      { id: all.auditEntries[0].id },
      as(chief.token, reader),
    );
    expect(node.body.data.node.action).toBe('organisation.updated');
  });

  it('keeps organisations apart', async () => {
    const theirs = await ok(await api(app, 'GET', '/v1/audit-entries?limit=100', asAdmin(reader)));
    expect(theirs.auditEntries.every((e: any) => e.organisationId === reader.organisation.id)).toBe(true);
    const [mine] = await query<{ id: string }>(app, 'SELECT id FROM audit_entries WHERE "organisationId" = $1 LIMIT 1', [
      org.organisation.id,
    ]);
    const foreign = await graphql(app, 'query($id: ID!) { auditEntry(id: $id) { id } }', { id: mine!.id }, asAdmin(reader));
    expect(foreign.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });
});

describe('the database keeps the log', () => {
  const insert = (organisationId: string, daysAgo: number) =>
    query<{ id: string }>(
      app,
      `INSERT INTO audit_entries (id, "organisationId", "actorKind", action, "targetType", "targetId", "createdAt")
       VALUES ($1, $2, 'system', 'event.updated', 'event', 'evt_x', now() - make_interval(days => $3)) RETURNING id`,
      [newId('auditEntry'), organisationId, daysAgo],
    ).then((rows) => rows[0]!.id);

  it('refuses UPDATE, DELETE and TRUNCATE of entries', async () => {
    const id = await insert(org.organisation.id, 0);
    await expect(query(app, `UPDATE audit_entries SET action = 'event.created' WHERE id = $1`, [id])).rejects.toThrow(
      /cannot be changed or deleted/,
    );
    await expect(query(app, 'DELETE FROM audit_entries WHERE id = $1', [id])).rejects.toThrow(/cannot be changed or deleted/);
    await expect(query(app, 'TRUNCATE audit_entries')).rejects.toThrow(/cannot be changed or deleted/);
    expect(await query(app, 'SELECT id FROM audit_entries WHERE id = $1 AND action = $2', [id, 'event.updated'])).toHaveLength(1);
  });

  it('prunes entries older than AUDIT_RETENTION_DAYS and keeps the rest; the permission ends with the pruning', async () => {
    const pruneOrg = await createOrganisation(app, 'auditprune');
    const old = await insert(pruneOrg.organisation.id, 400);
    const older = await insert(pruneOrg.organisation.id, 366);
    const kept = await insert(pruneOrg.organisation.id, 300);
    const fresh = await insert(pruneOrg.organisation.id, 0);
    expect(app().config.AUDIT_RETENTION_DAYS).toBe(365);
    expect(await pruneAuditEntries(app().runtime.db, app().config.AUDIT_RETENTION_DAYS)).toBeGreaterThanOrEqual(2);
    const left = await query<{ id: string }>(app, 'SELECT id FROM audit_entries WHERE "organisationId" = $1', [pruneOrg.organisation.id]);
    expect(left.map((row) => row.id).sort()).toEqual([kept, fresh].sort());
    expect(left.map((row) => row.id)).not.toContain(old);
    expect(left.map((row) => row.id)).not.toContain(older);
    // SET LOCAL ended with the pruning's transaction: the same pool's connections refuse again.
    await expect(app().runtime.db.$executeRaw`DELETE FROM audit_entries WHERE id = ${kept}`).rejects.toThrow(
      /cannot be changed or deleted/,
    );
  });
});
