import { expect } from 'vitest';
import { newId } from '../../src/ids.ts';
import { issueSession } from '../../src/services/sessions.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { appOf, type AppRef } from './app.ts';
import { asAdmin, magicLinkCode } from './credentials.ts';
import { api, tag, type TestOrganisation } from './fixtures.ts';
import { mailedInvitationCode } from './mail.ts';
import { recordTestEvent } from './webhook-receiver.ts';
import { createCatalogue, openCart, placeOrder, seedCatalogue, type Catalogue, type SeededCatalogue } from './sales.ts';

/**
 * One of every thing an organisation owns, each real (made over the API where that is the
 * subject elsewhere, written directly where it is a mere fixture), and factories of fresh ones for
 * tests that consume what they touch (delete, revoke, cancel, redeem), so no test depends on the
 * order tests run in.
 */

export interface OrganisationThings {
  org: TestOrganisation;
  /** On sale, sold through `catalogue.channel`; its ticket type has no capacity limit. */
  catalogue: SeededCatalogue;
  /** A draft event with an occurrence and a ticket type: the one changes are made to. */
  draft: Catalogue;
  /** A custom role (events.read) nobody holds. */
  roleId: string;
  /** A custom role (events.read) held by `userId` on the first account through `assignmentId`. */
  assignedRoleId: string;
  userId: string;
  assignmentId: string;
  apiKeyId: string;
  invitationId: string;
  identityProviderId: string;
  webhookEndpointId: string;
  /** A confirmed order of the catalogue, its customer and its (one) pass. */
  order: { id: string; customerId: string; email: string };
  pass: { id: string; code: string };
  /** An open cart of the catalogue made with the publishable key, and the sales session that reaches it. */
  cart: { id: string; session: string };
  fresh: FreshThings;
}

export type FreshThings = ReturnType<typeof freshThings>;

/**
 * Seeds one of every thing in `org`. `identityProvider` is the body of its provider (an issuer of a
 * test OpenID provider, say); by default one at an example.com issuer that is never fetched.
 */
export async function seedThings(
  app: AppRef,
  org: TestOrganisation,
  options: { identityProvider?: Record<string, unknown> } = {},
): Promise<OrganisationThings> {
  const fresh = freshThings(app, org);
  const [catalogue, draft, roleId, assignedRoleId, user, apiKeyId, invitationId, identityProviderId, webhookEndpointId] = await Promise.all(
    [
      seedCatalogue(app, org, { capacity: null }),
      createCatalogue(app, org, { status: 'draft', name: 'Draft concert', capacity: null }),
      fresh.roleId(),
      fresh.roleId(),
      fresh.user(),
      fresh.apiKeyId(),
      fresh.invitationId(),
      api(app, 'POST', '/v1/identity-providers', { ...asAdmin(org), body: options.identityProvider ?? fresh.identityProviderBody() }).then(
        (res) => {
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          return res.body.provider.id as string;
        },
      ),
      fresh.webhookEndpointId(),
    ],
  );
  fresh.catalogue = catalogue;
  fresh.draft = draft;
  const assignmentId = await fresh.assignmentId({ userId: user.id, roleId: assignedRoleId });
  const { order, email, passes } = await placeOrder(app, catalogue.channel, catalogue);
  const { cart, shop } = await openCart(app, catalogue.channel.publishable, catalogue);
  return {
    org,
    catalogue,
    draft,
    roleId,
    assignedRoleId,
    userId: user.id,
    assignmentId,
    apiKeyId,
    invitationId,
    identityProviderId,
    webhookEndpointId,
    order: { id: order.id, customerId: order.customerId, email },
    pass: passes[0]!,
    cart: { id: cart.id, session: shop.state.session! },
    fresh,
  };
}

/** Factories of fresh things of `org`; the sales ones need the catalogue `seedThings` adds. */
function freshThings(app: AppRef, org: TestOrganisation) {
  const db = () => appOf(app).runtime.db;
  const organisationId = org.organisation.id;
  const created = async (res: Promise<{ status: number; body: any }>, status = 201) => {
    const answer = await res;
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    return answer.body;
  };
  const invitation = async () => {
    const body = await created(
      api(app, 'POST', '/v1/user-invitations', { ...asAdmin(org), body: { organisationId, email: `invitee-${tag()}@things.test` } }),
    );
    return body.invitation.id as string;
  };
  const base = {
    catalogue: undefined as SeededCatalogue | undefined,
    draft: undefined as Catalogue | undefined,
    /** An active user of the organisation without a password or roles: someone to assign roles to. */
    async user() {
      const email = `user-${tag()}@things.test`;
      const person = await db().person.create({ data: { id: newId('person'), email } });
      return db().user.create({ data: { id: newId('user'), organisationId, personId: person.id, email, status: 'active' } });
    },
    /** A custom role holding `permissions` (default events.read), over /v1. */
    async roleId(permissions = ['events.read']) {
      const body = await created(api(app, 'POST', '/v1/roles', { ...asAdmin(org), body: { name: `Role ${tag()}`, permissions } }));
      return body.id as string;
    },
    /** An assignment on the first account (a fresh user and role unless given), over /v1. */
    async assignmentId(options: { userId?: string; roleId?: string } = {}) {
      const userId = options.userId ?? (await base.user()).id;
      const roleId = options.roleId ?? (await base.roleId());
      const body = await created(
        api(app, 'POST', '/v1/user-account-roles', { ...asAdmin(org), body: { userId, accountId: org.account.id, roleId } }),
      );
      return body.assignment.id as string;
    },
    async apiKeyId() {
      const body = await created(
        api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body: { name: `Key ${tag()}`, scopes: ['events.read'] } }),
      );
      return body.apiKey.id as string;
    },
    /** A pending invitation (no roles) to a fresh email, over /v1. */
    invitationId: invitation,
    /** A pending invitation and its code, read from the mail the invitee gets. */
    async invitationCode() {
      return mailedInvitationCode(app, await invitation());
    },
    identityProviderBody() {
      const host = `https://id-${tag()}.example.com`;
      return { providerType: 'oidc', issuer: host, jwksUri: `${host}/jwks`, clientId: 'ticketing' };
    },
    async webhookEndpointId() {
      const body = await created(
        api(app, 'POST', '/v1/webhook-endpoints', {
          ...asAdmin(org),
          body: { accountId: org.account.id, url: `http://127.0.0.1:9/things-${tag()}`, eventTypes: ['ticket.redeemed'] },
        }),
      );
      return body.endpoint.id as string;
    },
    /** A pending delivery (a ticket.redeemed event, recorded directly) to a fresh endpoint. */
    async webhookDeliveryId() {
      const endpointId = await base.webhookEndpointId();
      const accountId = org.account.id;
      const payload = views.ticketRedeemed({
        redemptionId: 'red_things',
        passId: 'pas_things',
        orderId: 'ord_things',
        entitlementId: 'ent_things',
        accountId,
      });
      const { eventId } = await recordTestEvent(db(), { organisationId, accountId, type: 'ticket.redeemed', payload });
      return (await db().webhookDelivery.findFirstOrThrow({ where: { eventId, endpointId }, select: { id: true } })).id;
    },
    /** A source event (a ticket.redeemed, recorded directly) of the first account. */
    async webhookEventId() {
      const accountId = org.account.id;
      const payload = views.ticketRedeemed({
        redemptionId: 'red_things',
        passId: 'pas_things',
        orderId: 'ord_things',
        entitlementId: 'ent_things',
        accountId,
      });
      return (await recordTestEvent(db(), { organisationId, accountId, type: 'ticket.redeemed', payload })).eventId;
    },
    /** An account of the organisation, written directly. */
    async accountId() {
      return (await db().account.create({ data: { id: newId('account'), organisationId, name: `Account ${tag()}` } })).id;
    },
    /** A draft event on the first account, written directly. */
    async eventId() {
      const event = await db().event.create({
        data: { id: newId('event'), organisationId, accountId: org.account.id, name: `Event ${tag()}`, status: 'draft', timezone: 'UTC' },
      });
      return event.id;
    },
    /** A ticket type of the draft event, written directly. */
    async ticketTypeId() {
      const { eventId, accountId } = draft();
      const type = await db().ticketType.create({
        data: { id: newId('ticketType'), organisationId, accountId, eventId, name: `Type ${tag()}`, priceAmount: 1000, currency: 'GBP' },
      });
      return type.id;
    },
    /** A key of the catalogue's channel, over /v1; answers its id. */
    async channelKeyId(kind: 'publishable' | 'secret' = 'publishable') {
      const body = await created(
        api(app, 'POST', `/v1/sales-channels/${catalogue().channel.channelId}/keys`, { ...asAdmin(org), body: { kind } }),
      );
      return body.channelKey.id as string;
    },
    /** An order of the catalogue through the storefront flow: confirmed (with a pass) unless `pending`. */
    async order(options: { pending?: boolean } = {}) {
      return placeOrder(app, catalogue().channel, catalogue(), options);
    },
    /** A pass of a fresh confirmed order. */
    async pass() {
      return (await base.order()).passes[0]!;
    },
    /** An open cart made with the publishable key, and its sales session. */
    async cart() {
      const { cart, shop } = await openCart(app, catalogue().channel.publishable, catalogue());
      return { id: cart.id, session: shop.state.session! };
    },
    /** A customer of the catalogue's account, written directly (magic links go to customers only). */
    async customer() {
      const email = `customer-${tag()}@things.test`;
      const customer = await db().customer.create({
        data: { id: newId('customer'), organisationId, accountId: catalogue().accountId, email },
      });
      return { id: customer.id, email };
    },
    /** The magic-link code of a fresh customer, requested with the publishable key (`headers`: a client address, say). */
    async magicLinkCode(headers: Record<string, string> = {}) {
      return magicLinkCode(app, (await base.customer()).email, { channelKey: catalogue().channel.publishable, headers });
    },
    /** A refresh token of a new session of the organisation's admin, issued as a sign-in issues it (without the password's cost). */
    async refreshToken() {
      const { runtime } = appOf(app);
      return (await issueSession(runtime, runtime.db, org.user.personId, organisationId)).refreshToken;
    },
  };
  const catalogue = () => {
    if (!base.catalogue) throw new Error('fresh sales things need the catalogue seedThings makes');
    return base.catalogue;
  };
  const draft = () => {
    if (!base.draft) throw new Error('a fresh ticket type needs the draft event seedThings makes');
    return base.draft;
  };
  return base;
}
