import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey, customRole } from '../support/credentials.ts';
import { createStaffUser, createOrganisation, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Ids with their entities beside them: an event screen reads its venue and account, an
 * occurrence or a ticket type its event, an order line its event, occurrence and ticket type, in
 * one request. Each entity is shown under its own type's rule.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;
let orderId: string;
let passId: string;

beforeAll(async () => {
  org = await createOrganisation(app, 'relations');
  catalogue = await seedCatalogue(app, org);
  const placed = await placeOrder(app, catalogue.channel, catalogue);
  orderId = placed.order.id;
  passId = placed.passes[0]!.id;
});

type Refusal = { path: Array<string | number>; extensions: { code: string } };
const refusals = (errors: Refusal[] | undefined) => (errors ?? []).map((error) => [error.path.join('.'), error.extensions.code]).sort();

const as = (token: string) => ({ token, org: org.slug });

describe('relations', () => {
  it('answer the entity beside its id, from an event down to an order line', async () => {
    const res = await graphql(
      app,
      `
        query ($eventId: ID!, $orderId: ID!) {
          event(id: $eventId) {
            venue {
              id
            }
            account {
              id
            }
          }
          eventOccurrences(eventId: $eventId) {
            nodes {
              event {
                id
              }
            }
          }
          ticketTypes(eventId: $eventId) {
            nodes {
              event {
                id
                name
              }
            }
          }
          order(id: $orderId) {
            lineItems {
              event {
                id
              }
              occurrence {
                id
              }
              ticketType {
                id
              }
            }
          }
        }
      `,
      { eventId: catalogue.eventId, orderId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toEqual({
      event: { venue: { id: catalogue.venueId }, account: { id: catalogue.accountId } },
      eventOccurrences: { nodes: [{ event: { id: catalogue.eventId } }] },
      ticketTypes: { nodes: [{ event: { id: catalogue.eventId, name: 'Concert' } }] },
      order: {
        lineItems: [
          { event: { id: catalogue.eventId }, occurrence: { id: catalogue.occurrenceId }, ticketType: { id: catalogue.ticketTypeId } },
        ],
      },
    });
  });

  it('show an entity only under its own rule: a key that reads orders but not events sees the line, not the event', async () => {
    const { key } = await createApiKey(app, org, ['orders.read']);
    const res = await graphql(
      app,
      'query ($orderId: ID!) { order(id: $orderId) { id lineItems { quantity event { id name } occurrence { id } } } }',
      { orderId },
      as(key),
    );
    expect(res.body.data.order.id).toBe(orderId);
    expect(res.body.data.order.lineItems).toEqual([{ quantity: 1, event: null, occurrence: null }]);
    // Refused as the contract refuses a key without the scope: NOT_FOUND, at the entity's place.
    const refusals = res.body.errors.map((error: { path: Array<string | number>; extensions: { code: string } }) => [
      error.path.join('.'),
      error.extensions.code,
    ]);
    expect(refusals.sort()).toEqual([
      ['order.lineItems.0.event', 'NOT_FOUND'],
      ['order.lineItems.0.occurrence.id', 'NOT_FOUND'],
    ]);
  });

  it('answer the account beside every accountId of the catalogue and the sales', async () => {
    const res = await graphql(
      app,
      `
        query ($eventId: ID!, $orderId: ID!, $channelId: ID!) {
          venues(first: 1) {
            nodes {
              account {
                id
              }
            }
          }
          eventOccurrences(eventId: $eventId) {
            nodes {
              account {
                id
              }
            }
          }
          ticketTypes(eventId: $eventId) {
            nodes {
              account {
                id
              }
            }
          }
          salesChannel(id: $channelId) {
            account {
              id
            }
          }
          order(id: $orderId) {
            account {
              id
            }
            customer {
              account {
                id
              }
            }
            passes {
              account {
                id
              }
            }
          }
        }
      `,
      { eventId: catalogue.eventId, orderId, channelId: catalogue.channel.channelId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    const account = { account: { id: catalogue.accountId } };
    expect(res.body.data).toEqual({
      venues: { nodes: [account] },
      eventOccurrences: { nodes: [account] },
      ticketTypes: { nodes: [account] },
      salesChannel: account,
      order: { ...account, customer: account, passes: [account] },
    });
  });

  it('answer what a pass, an order, a channel key and a redemption name', async () => {
    const redeemed = await graphql(
      app,
      `
        mutation ($passId: ID!) {
          redeemPass(passId: $passId) {
            redemption {
              pass {
                id
              }
              account {
                id
              }
              redeemedBy {
                id
              }
            }
            userErrors {
              code
            }
          }
        }
      `,
      { passId },
      as(org.adminToken),
    );
    expect(redeemed.body.errors).toBeUndefined();
    const me = await graphql(app, '{ myRoles { roles { userId } } }', {}, as(org.adminToken));
    expect(redeemed.body.data.redeemPass.redemption).toEqual({
      pass: { id: passId },
      account: { id: catalogue.accountId },
      redeemedBy: { id: me.body.data.myRoles.roles[0].userId },
    });
    const res = await graphql(
      app,
      `
        query ($passId: ID!, $orderId: ID!) {
          pass(id: $passId) {
            order {
              id
            }
            customer {
              id
            }
            ticketType {
              id
            }
            occurrence {
              id
            }
          }
          order(id: $orderId) {
            customerId
            channel {
              id
              keys {
                channel {
                  id
                }
              }
            }
          }
        }
      `,
      { passId, orderId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    const { customerId } = res.body.data.order;
    expect(res.body.data.pass).toEqual({
      order: { id: orderId },
      customer: { id: customerId },
      ticketType: { id: catalogue.ticketTypeId },
      occurrence: { id: catalogue.occurrenceId },
    });
    const channel = { id: catalogue.channel.channelId };
    expect(res.body.data.order.channel).toEqual({ ...channel, keys: [{ channel }, { channel }] });
  });

  it('answer the organisation beside every organisationId, and an invitation’s user and account', async () => {
    const invited = await graphql(
      app,
      `
        mutation ($input: CreateInvitationInput!) {
          createInvitation(input: $input) {
            invitation {
              id
              userId
            }
            userErrors {
              code
            }
          }
        }
      `,
      {
        input: {
          organisationId: org.organisation.id,
          email: `invited-${orderId.slice(-6).toLowerCase()}@relations.test`,
          firstName: 'In',
          lastName: 'Vited',
          roleIds: [systemRole(org, 'viewer')],
          accountId: catalogue.accountId,
        },
      },
      as(org.adminToken),
    );
    expect(invited.body.errors).toBeUndefined();
    const invitation = invited.body.data.createInvitation.invitation;
    const organisation = { organisation: { id: org.organisation.id } };
    const res = await graphql(
      app,
      `
        query ($eventId: ID!, $invitationId: ID!, $channelId: ID!) {
          event(id: $eventId) {
            organisation {
              id
            }
            venue {
              organisation {
                id
              }
            }
            account {
              organisation {
                id
              }
            }
          }
          eventOccurrences(eventId: $eventId) {
            nodes {
              organisation {
                id
              }
            }
          }
          ticketTypes(eventId: $eventId) {
            nodes {
              organisation {
                id
              }
            }
          }
          salesChannel(id: $channelId) {
            organisation {
              id
            }
          }
          roles(first: 1) {
            nodes {
              organisation {
                id
              }
            }
          }
          roleAssignments(first: 1) {
            nodes {
              organisation {
                id
              }
            }
          }
          invitation(id: $invitationId) {
            organisation {
              id
            }
            user {
              id
            }
            account {
              id
            }
          }
        }
      `,
      { eventId: catalogue.eventId, invitationId: invitation.id, channelId: catalogue.channel.channelId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toEqual({
      event: { ...organisation, venue: organisation, account: organisation },
      eventOccurrences: { nodes: [organisation] },
      ticketTypes: { nodes: [organisation] },
      salesChannel: organisation,
      roles: { nodes: [organisation] },
      roleAssignments: { nodes: [organisation] },
      invitation: { ...organisation, user: { id: invitation.userId }, account: { id: catalogue.accountId } },
    });
  });

  it('refuse each entity the caller may not read at its own path, null with FORBIDDEN, while the rest answers', async () => {
    // Orders and events, not sales channels, role assignments or the organisation.
    const role = await customRole(app, org, ['orders.read', 'passes.read', 'events.read']);
    const staff = await createStaffUser(app, org, [{ roleId: role.id, accountId: catalogue.accountId }], 'orders-only');
    const res = await graphql(
      app,
      `
        query ($orderId: ID!, $passId: ID!, $eventId: ID!) {
          order(id: $orderId) {
            id
            channel {
              id
            }
            passes {
              id
              order {
                id
              }
              occurrence {
                id
              }
            }
          }
          pass(id: $passId) {
            id
            redemption: order {
              id
            }
          }
          event(id: $eventId) {
            id
            organisation {
              id
            }
          }
        }
      `,
      { orderId, passId, eventId: catalogue.eventId },
      as(staff.token),
    );
    expect(res.body.data).toEqual({
      order: { id: orderId, channel: null, passes: [{ id: passId, order: { id: orderId }, occurrence: { id: catalogue.occurrenceId } }] },
      pass: { id: passId, redemption: { id: orderId } },
      event: { id: catalogue.eventId, organisation: null },
    });
    // Refused by the entity's type, as accountRelation is: at the first field read of it.
    expect(refusals(res.body.errors)).toEqual([
      ['event.organisation.id', 'FORBIDDEN'],
      ['order.channel.id', 'FORBIDDEN'],
    ]);
  });
});

describe('relations an admin screen follows instead of ids', () => {
  it('answer who made a key and an event, what a channel lists, what an invitation grants, what a delivery sends and how a pass was redeemed', async () => {
    const { apiKey, key } = await createApiKey(app, org, ['audit.read']);
    const placed = await placeOrder(app, catalogue.channel, catalogue);
    const redeemedPass = placed.passes[0]!.id;
    const setUp = await graphql(
      app,
      `
        mutation (
          $channel: CreateSalesChannelInput!
          $invitation: CreateInvitationInput!
          $endpoint: CreateWebhookEndpointInput!
          $pass: ID!
        ) {
          createSalesChannel(input: $channel) {
            salesChannel {
              eventIds
              events {
                id
                name
              }
            }
          }
          createInvitation(input: $invitation) {
            invitation {
              roleIds
              roles {
                id
                name
              }
            }
          }
          createWebhookEndpoint(input: $endpoint) {
            createdWebhookEndpoint {
              endpoint {
                id
              }
            }
          }
          redeemPass(passId: $pass) {
            redemption {
              id
            }
          }
        }
      `,
      {
        channel: {
          accountId: catalogue.accountId,
          name: 'Listed',
          slug: `listed-${placed.order.id.slice(-8).toLowerCase()}`,
          sellsAllEvents: false,
          eventIds: [catalogue.eventId],
        },
        invitation: {
          organisationId: org.organisation.id,
          email: `granted-${placed.order.id.slice(-6).toLowerCase()}@relations.test`,
          roleIds: [systemRole(org, 'viewer')],
          accountId: catalogue.accountId,
        },
        endpoint: { accountId: catalogue.accountId, url: 'http://127.0.0.1:9/hooks' },
        pass: redeemedPass,
      },
      as(org.adminToken),
    );
    expect(setUp.body.errors).toBeUndefined();
    const { createSalesChannel, createInvitation, createWebhookEndpoint, redeemPass } = setUp.body.data;
    expect(createSalesChannel.salesChannel.events.map((event: { id: string }) => event.id)).toEqual(
      createSalesChannel.salesChannel.eventIds,
    );
    expect(createInvitation.invitation.roles).toEqual([{ id: systemRole(org, 'viewer'), name: expect.any(String) }]);

    const tested = await graphql(
      app,
      `
        mutation ($id: ID!) {
          testWebhookEndpoint(id: $id) {
            webhookDelivery {
              eventId
              event {
                id
                type
                deliveries {
                  id
                }
              }
            }
          }
        }
      `,
      { id: createWebhookEndpoint.createdWebhookEndpoint.endpoint.id },
      as(org.adminToken),
    );
    expect(tested.body.errors).toBeUndefined();
    const delivery = tested.body.data.testWebhookEndpoint.webhookDelivery;
    expect(delivery.event).toEqual({ id: delivery.eventId, type: 'event.created', deliveries: [{ id: expect.any(String) }] });

    const me = await graphql(app, '{ myRoles { roles { userId } } }', {}, as(org.adminToken));
    const adminUser = { id: me.body.data.myRoles.roles[0].userId };
    const read = await graphql(
      app,
      `
        query ($key: ID!, $event: ID!, $pass: ID!) {
          apiKey(id: $key) {
            creator {
              id
            }
          }
          event(id: $event) {
            createdBy
            creator {
              id
            }
          }
          pass(id: $pass) {
            redemption {
              id
              redeemedBy {
                id
              }
            }
          }
          auditEntries(targetId: $key, first: 5) {
            nodes {
              action
              account {
                id
              }
              actor {
                __typename
                id
              }
              target {
                __typename
                id
              }
            }
          }
        }
      `,
      { key: apiKey.id, event: catalogue.eventId, pass: redeemedPass },
      as(org.adminToken),
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.apiKey.creator).toEqual(adminUser);
    expect(read.body.data.event.creator).toEqual(read.body.data.event.createdBy ? { id: read.body.data.event.createdBy } : null);
    expect(read.body.data.pass.redemption).toEqual({ id: redeemPass.redemption.id, redeemedBy: adminUser });
    expect(read.body.data.auditEntries.nodes).toEqual([
      {
        action: 'api_key.created',
        account: null,
        actor: { __typename: 'User', ...adminUser },
        target: { __typename: 'ApiKey', id: apiKey.id },
      },
    ]);

    // A key that reads the audit log but not users or keys: the entry answers; its actor is null as
    // user(id:) answers such a caller (no such user), its target refused at its own path.
    const byKey = await graphql(
      app,
      '($key: ID!) { auditEntries(targetId: $key, first: 5) { nodes { action actor { id } target { id } } } }'.replace(/^/, 'query '),
      { key: apiKey.id },
      as(key),
    );
    expect(byKey.body.data.auditEntries.nodes).toEqual([{ action: 'api_key.created', actor: null, target: null }]);
    expect(refusals(byKey.body.errors).map(([path]) => path)).toEqual(['auditEntries.nodes.0.target']);
  });
});

describe('a deletion that changes its parent', () => {
  it("answers the deleted ticket type's event as it is now, for a cache to update its ticketCount", async () => {
    const made = await graphql(
      app,
      `
        mutation ($eventId: ID!) {
          createTicketType(eventId: $eventId, input: { name: "Balcony", priceAmount: 1500, currency: "GBP" }) {
            ticketType {
              id
              event {
                id
                ticketCount
              }
            }
          }
        }
      `,
      { eventId: catalogue.eventId },
      as(org.adminToken),
    );
    const { id, event } = made.body.data.createTicketType.ticketType;
    const gone = await graphql(
      app,
      'mutation ($id: ID!) { deleteTicketType(id: $id) { deletedId event { id ticketCount } userErrors { code } } }',
      { id },
      as(org.adminToken),
    );
    expect(gone.body.data.deleteTicketType).toEqual({
      deletedId: id,
      event: { id: event.id, ticketCount: event.ticketCount - 1 },
      userErrors: [],
    });
  });
});
