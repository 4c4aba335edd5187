import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptSecret } from '../../src/webhooks/secrets.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, staffWithoutRights } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, graphql, systemRole, tag, type TestOrganisation } from '../support/fixtures.ts';
import { authorizationCodeFlow, providerRegistration, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { placeOrder, seedCatalogue } from '../support/sales.ts';
import { recordFailedDeliveries } from '../support/webhook-receiver.ts';
import { auditEntriesOf, type EntryRow } from '../support/audit.ts';

/**
 * The audit log records every change a change brings with it, not only the one asked for: a deleted
 * role's or invitation's assignments, an invitation's roles, the default provider demoted, an
 * invitation redeemed by signing in, the pending orders an event's or occurrence's end cancels; each
 * entry's before is what its change replaced, and an operator action's entry commits with its change.
 */

const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let org: TestOrganisation;
const admin = () => asAdmin(org);

beforeAll(async () => {
  org = await createOrganisation(app, 'audit-coverage');
});

function entriesOf(targetId: string, action?: string): Promise<EntryRow[]> {
  return auditEntriesOf(app, org.organisation.id, targetId, action);
}

async function ok(res: { status: number; body: any }, status = 200) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}

describe('roles', () => {
  it('deleteRole: every assignment it removes gets a role_assignment.deleted entry', async () => {
    const role = await ok(
      await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: `Door ${tag()}`, permissions: ['events.read'] } }),
      201,
    );
    const staff = await staffWithoutRights(app, org, 'holder');
    const { assignment } = await ok(
      await api(app, 'POST', '/v1/user-account-roles', {
        ...admin(),
        body: { userId: staff.userId, accountId: org.account.id, roleId: role.id },
      }),
      201,
    );
    await ok(await api(app, 'DELETE', `/v1/roles/${role.id}`, admin()));
    // The assignment is gone: the user lost the role.
    expect(await query(app, 'SELECT id FROM role_assignments WHERE id = $1', [assignment.id])).toHaveLength(0);
    expect((await entriesOf(assignment.id)).map((e) => e.action)).toEqual(['role_assignment.created', 'role_assignment.deleted']);
  });
});

describe('identity providers', () => {
  const provider = async (isDefault: boolean) => {
    const host = `http://127.0.0.1:9/idp-${tag()}`;
    const body = await ok(
      await api(app, 'POST', '/v1/identity-providers', {
        ...admin(),
        body: { providerType: 'oidc', issuer: host, jwksUri: `${host}/jwks`, clientId: 'ticketing', isDefault },
      }),
      201,
    );
    return body.provider as { id: string };
  };

  it('updateIdentityProvider isDefault=true: the provider that loses the default gets an entry (isDefault true -> false)', async () => {
    const a = await provider(true);
    const b = await provider(false);
    await ok(await api(app, 'PATCH', `/v1/identity-providers/${b.id}`, { ...admin(), body: { isDefault: true } }));
    const [row] = await query<{ isDefault: boolean }>(app, 'SELECT "isDefault" FROM identity_providers WHERE id = $1', [a.id]);
    expect(row!.isDefault).toBe(false);
    const updated = (await entriesOf(a.id)).filter((e) => e.action === 'identity_provider.updated');
    expect(updated, 'no entry for the provider whose isDefault was switched off').toHaveLength(1);
    expect(updated[0]!.changes.isDefault).toEqual({ before: true, after: false });
  });

  it('createIdentityProvider isDefault=true: the previous default gets an entry', async () => {
    const a = await provider(true);
    await provider(true);
    const [row] = await query<{ isDefault: boolean }>(app, 'SELECT "isDefault" FROM identity_providers WHERE id = $1', [a.id]);
    expect(row!.isDefault).toBe(false);
    expect((await entriesOf(a.id)).map((e) => e.action)).toContain('identity_provider.updated');
  });
});

describe('invitations', () => {
  it('createInvitation with roleIds: the role assignments it grants get role_assignment.created entries', async () => {
    const email = `inv-${tag()}@audit.test`;
    const { invitation } = await ok(
      await api(app, 'POST', '/v1/user-invitations', {
        ...admin(),
        body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'account_admin')], accountId: org.account.id },
      }),
      201,
    );
    const assignments = await query<{ id: string }>(app, 'SELECT id FROM role_assignments WHERE "userId" = $1', [invitation.userId]);
    expect(assignments).toHaveLength(1);
    expect((await entriesOf(assignments[0]!.id)).map((e) => e.action)).toEqual(['role_assignment.created']);
  });

  it('deleteInvitation: the pending user’s role assignments it deletes get role_assignment.deleted entries', async () => {
    const email = `inv-${tag()}@audit.test`;
    const { invitation } = await ok(
      await api(app, 'POST', '/v1/user-invitations', {
        ...admin(),
        body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'viewer')] },
      }),
      201,
    );
    const [assignment] = await query<{ id: string }>(app, 'SELECT id FROM role_assignments WHERE "userId" = $1', [invitation.userId]);
    await ok(await api(app, 'DELETE', `/v1/user-invitations/${invitation.id}`, admin()));
    expect(await query(app, 'SELECT id FROM role_assignments WHERE id = $1', [assignment!.id])).toHaveLength(0);
    expect((await entriesOf(assignment!.id)).map((e) => e.action)).toContain('role_assignment.deleted');
  });

  it('re-inviting an email whose invitation expired deletes the old invitation: it gets an invitation.deleted entry', async () => {
    const email = `inv-${tag()}@audit.test`;
    const first = await ok(
      await api(app, 'POST', '/v1/user-invitations', { ...admin(), body: { organisationId: org.organisation.id, email } }),
      201,
    );
    // Time passes: the invitation expires.
    await query(app, `UPDATE invitations SET "expiresAt" = now() - interval '1 day' WHERE id = $1`, [first.invitation.id]);
    await ok(await api(app, 'POST', '/v1/user-invitations', { ...admin(), body: { organisationId: org.organisation.id, email } }), 201);
    expect(await query(app, 'SELECT id FROM invitations WHERE id = $1', [first.invitation.id]), 'old invitation was deleted').toHaveLength(
      0,
    );
    expect((await entriesOf(first.invitation.id)).map((e) => e.action)).toEqual(['invitation.created', 'invitation.deleted']);
  });
});

describe('invitation redeemed by federation', () => {
  let op: TestOidcProvider;
  beforeAll(async () => {
    op = await startOidcProvider();
  });
  afterAll(async () => {
    await op?.stop();
  });

  it('signing in through the identity provider redeems the invitation: invitation.redeemed is written', async () => {
    const fedOrg = await createOrganisation(app, 'audit-federated');
    await ok(
      await api(app, 'POST', '/v1/identity-providers', {
        ...asAdmin(fedOrg),
        body: providerRegistration(op),
      }),
      201,
    );
    const t = tag();
    const person = { accountId: `sub-${t}`, email: `person-${t}@example.test`, password: `secret ${t}`, givenName: 'Ada' };
    op.addAccount(person);
    const { invitation } = await ok(
      await api(app, 'POST', '/v1/user-invitations', {
        ...asAdmin(fedOrg),
        body: { organisationId: fedOrg.organisation.id, email: person.email, roleIds: [systemRole(fedOrg, 'viewer')] },
      }),
      201,
    );
    const flow = await authorizationCodeFlow(op, person);
    await ok(await api(app, 'POST', '/v1/auth/federate', { body: { token: flow.idToken } }));
    const [row] = await query<{ redeemedAt: Date | null }>(app, 'SELECT "redeemedAt" FROM invitations WHERE id = $1', [invitation.id]);
    expect(row!.redeemedAt).not.toBeNull();
    const actions = (
      await query<{ action: string }>(app, `SELECT action FROM audit_entries WHERE "organisationId" = $1 AND "targetId" = $2`, [
        fedOrg.organisation.id,
        invitation.id,
      ])
    ).map((e) => e.action);
    expect(actions).toContain('invitation.redeemed');
  });
});

describe('orders cancelled by a configuration change', () => {
  it('deleteEvent cancels its pending orders: each gets an order.cancelled entry', async () => {
    const catalogue = await seedCatalogue(app, org);
    const pending = await placeOrder(app, catalogue.channel, catalogue, { pending: true });
    await ok(await api(app, 'DELETE', `/v1/events/${catalogue.eventId}`, admin()));
    const [row] = await query<{ status: string }>(app, 'SELECT status FROM orders WHERE id = $1', [pending.order.id]);
    expect(row!.status).toBe('cancelled');
    const entries = await entriesOf(pending.order.id);
    expect(entries.map((e) => e.action)).toEqual(['order.cancelled']);
    // The person whose change stopped the sales.
    expect(entries[0]).toMatchObject({ actorKind: 'user', changes: { status: { before: 'pending', after: 'cancelled' } } });
  });

  it('updateEvent status cancelled cancels its pending orders: each gets an order.cancelled entry', async () => {
    const catalogue = await seedCatalogue(app, org);
    const pending = await placeOrder(app, catalogue.channel, catalogue, { pending: true });
    await ok(await api(app, 'PATCH', `/v1/events/${catalogue.eventId}`, { ...admin(), body: { status: 'cancelled' } }));
    const [row] = await query<{ status: string }>(app, 'SELECT status FROM orders WHERE id = $1', [pending.order.id]);
    expect(row!.status).toBe('cancelled');
    expect((await entriesOf(pending.order.id)).map((e) => e.action)).toEqual(['order.cancelled']);
  });

  it('updateEventOccurrence status CANCELLED cancels its pending orders: each gets an order.cancelled entry', async () => {
    const catalogue = await seedCatalogue(app, org);
    const pending = await placeOrder(app, catalogue.channel, catalogue, { pending: true });
    const res = await graphql(
      app,
      'mutation($id: ID!) { updateEventOccurrence(id: $id, input: { status: CANCELLED }) { eventOccurrence { id status } userErrors { message } } }',
      { id: catalogue.occurrenceId },
      admin(),
    );
    expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
    const [row] = await query<{ status: string }>(app, 'SELECT status FROM orders WHERE id = $1', [pending.order.id]);
    expect(row!.status).toBe('cancelled');
    expect((await entriesOf(pending.order.id)).map((e) => e.action)).toEqual(['order.cancelled']);
  });
});

describe('before values', () => {
  it('concurrent PATCH /v1/accounts/{id}: the entries chain (only one starts from the original name)', async () => {
    const { account } = await ok(await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: 'original' } }), 201);
    const names = Array.from({ length: 8 }, (_, i) => `name-${i}`);
    const results = await Promise.all(names.map((name) => api(app, 'PATCH', `/v1/accounts/${account.id}`, { ...admin(), body: { name } })));
    for (const res of results) expect(res.status).toBe(200);
    const updates = (await entriesOf(account.id)).filter((e) => e.action === 'account.updated');
    expect(updates).toHaveLength(8);
    const fromOriginal = updates.filter((e) => e.changes.name?.before === 'original');
    // Eight updates applied one after the other: only the first was made to 'original'.
    expect(fromOriginal.map((e) => e.changes.name)).toHaveLength(1);
  });
});

describe('webhook secret rotations at once', () => {
  it('each keeps the secret the one before it handed out signing beside its own', async () => {
    const created = await ok(
      await api(app, 'POST', '/v1/webhook-endpoints', {
        ...admin(),
        body: { accountId: org.account.id, url: `http://127.0.0.1:9/rotated-${tag()}`, eventTypes: ['event.created'] },
      }),
      201,
    );
    const id = created.endpoint.id as string;
    const rotations = await Promise.all([1, 2, 3, 4, 5].map(() => api(app, 'POST', `/v1/webhook-endpoints/${id}/rotate-secret`, admin())));
    const secrets = rotations.map((res) => {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.secret as string;
    });
    const [row] = await query<{ secretCiphertext: string; previousSecretCiphertext: string }>(
      app,
      'SELECT "secretCiphertext", "previousSecretCiphertext" FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    const key = app().runtime.encryptionKey;
    // The last one's secret signs, and beside it during the overlap the secret it replaced: one
    // handed out by the rotation before it, never the secret before all five.
    const [current, previous] = [decryptSecret(row!.secretCiphertext, key), decryptSecret(row!.previousSecretCiphertext, key)];
    expect(secrets).toContain(current);
    expect(secrets.filter((secret) => secret !== current)).toContain(previous);
    const rotated = (await entriesOf(id)).filter((e) => e.action === 'webhook_endpoint.secret_rotated');
    expect(rotated).toHaveLength(5);
  });
});

describe('webhook operator actions', () => {
  async function endpointWithDelivery() {
    const created = await ok(
      await api(app, 'POST', '/v1/webhook-endpoints', {
        ...admin(),
        body: { accountId: org.account.id, url: `http://127.0.0.1:9/audited-${tag()}`, eventTypes: ['event.created'] },
      }),
      201,
    );
    const id = created.endpoint.id as string;
    const ids = await recordFailedDeliveries(app().runtime.db, { organisationId: org.organisation.id, accountId: org.account.id }, 1);
    const [delivery] = await query<{ id: string }>(app, 'SELECT id FROM webhook_deliveries WHERE id = ANY($1) AND "endpointId" = $2', [
      ids,
      id,
    ]);
    return { id, deliveryId: delivery!.id };
  }

  /** Makes the insert of entries of `action` fail, as any failure of the entry's write would. */
  async function refuseEntries(action: string) {
    await query(
      app,
      `CREATE OR REPLACE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.action = '${action}' THEN RAISE EXCEPTION 'the entry cannot be written'; END IF; RETURN NEW; END $$`,
    );
    await query(app, 'DROP TRIGGER IF EXISTS refuse_audit ON audit_entries');
    await query(app, 'CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_entries FOR EACH ROW EXECUTE FUNCTION refuse_audit()');
  }
  afterAll(async () => {
    await query(app, 'DROP TRIGGER IF EXISTS refuse_audit ON audit_entries');
  });

  it('resendWebhookDelivery: when its entry cannot be written, the endpoint’s circuit is not closed either', async () => {
    const { id, deliveryId } = await endpointWithDelivery();
    await query(app, `UPDATE webhook_endpoints SET "circuitOpenUntil" = now() + interval '1 hour' WHERE id = $1`, [id]);
    await refuseEntries('webhook_delivery.resent');
    const res = await api(app, 'POST', `/v1/webhook-deliveries/${deliveryId}/resend`, { ...admin(), body: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    expect(await entriesOf(deliveryId)).toEqual([]);
    const [row] = await query<{ circuitOpenUntil: Date | null }>(app, 'SELECT "circuitOpenUntil" FROM webhook_endpoints WHERE id = $1', [
      id,
    ]);
    // Same transaction: no entry, no change.
    expect(row!.circuitOpenUntil, 'circuit was closed although the request failed and no entry exists').not.toBeNull();
  });

  it('recoverWebhookEndpoint: when its entry cannot be written, the endpoint’s circuit is not closed either', async () => {
    const { id } = await endpointWithDelivery();
    await query(app, `UPDATE webhook_endpoints SET "circuitOpenUntil" = now() + interval '1 hour' WHERE id = $1`, [id]);
    await refuseEntries('webhook_endpoint.recovered');
    const res = await api(app, 'POST', `/v1/webhook-endpoints/${id}/recover`, {
      ...admin(),
      body: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    expect((await entriesOf(id)).map((e) => e.action)).toEqual(['webhook_endpoint.created']);
    const [row] = await query<{ circuitOpenUntil: Date | null }>(app, 'SELECT "circuitOpenUntil" FROM webhook_endpoints WHERE id = $1', [
      id,
    ]);
    expect(row!.circuitOpenUntil, 'circuit was closed although the request failed and no entry exists').not.toBeNull();
  });
});
