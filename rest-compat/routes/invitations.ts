import { z } from 'zod';
import { createInvitationInput, redeemInvitationInput } from '../../src/services/invitations.ts';
import { listQuery } from '../../src/pagination.ts';
import type { RestRoute } from '../route.ts';
import { deleted, deletion, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { signInResult } from './auth.ts';

/** docs/spec/service-spec.md §2 "User invitation", exactly: accountId and roleIds stay GraphQL-only. */
const FIELDS = 'id organisationId userId code email expiresAt redeemedAt createdAt';

const invitation = z.object({
  id: z.string(),
  organisationId: z.string(),
  userId: z.string(),
  code: z.string(),
  email: z.string(),
  expiresAt: z.string(),
  redeemedAt: z.string().nullable(),
  createdAt: z.string(),
});

const byId = z.object({ id: z.string().min(1) });
const TAG = 'User invitations';

export const invitationsRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/user-invitations',
    summary: 'Invitations of the organisation, newest first.',
    tag: TAG,
    organisation: true,
    operation: `query Invitations($page: Int, $limit: Int) {
      invitations(page: $page, limit: $limit) {
        nodes { ${FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => ({ invitations: data.invitations.nodes, pagination: data.invitations.pagination }),
    response: z.object({ invitations: z.array(invitation), pagination }),
  },
  {
    method: 'POST',
    path: '/user-invitations',
    summary:
      'Invite a person: creates a pending user with the roles (on accountId, our addition; default the oldest account) and mails the code.',
    tag: TAG,
    organisation: true,
    operation: `mutation CreateInvitation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { ${FIELDS} } } }`,
    body: createInvitationInput,
    bind: { input: 'body' },
    result: (data) => ({ invitation: data.createInvitation.invitation }),
    status: 201,
    response: z.object({ invitation }),
  },
  {
    method: 'GET',
    path: '/user-invitations/{id}',
    summary: 'One invitation.',
    tag: TAG,
    organisation: true,
    operation: `query Invitation($id: ID!) { invitation(id: $id) { ${FIELDS} } }`,
    params: byId,
    bind: { id: 'params.id' },
    result: (data) => ({ invitation: data.invitation }),
    response: z.object({ invitation }),
  },
  {
    method: 'DELETE',
    path: '/user-invitations/{id}',
    summary: 'Delete an invitation not yet redeemed, with its pending user and their roles.',
    tag: TAG,
    organisation: true,
    operation: `mutation DeleteInvitation($id: ID!) { deleteInvitation(id: $id) { deletedId } }`,
    params: byId,
    bind: { id: 'params.id' },
    result: (data) => deletion(data.deleteInvitation),
    response: deleted,
  },
  {
    method: 'POST',
    path: '/user-invitations/{id}/resend',
    summary: 'Replace the code and the expiry and send the mail again; the old code stops working.',
    tag: TAG,
    organisation: true,
    operation: `mutation ResendInvitation($id: ID!) { resendInvitation(id: $id) { invitation { ${FIELDS} } } }`,
    params: byId,
    bind: { id: 'params.id' },
    result: (data) => ({ invitation: data.resendInvitation.invitation }),
    response: z.object({ invitation }),
  },
  {
    method: 'POST',
    path: '/auth/invitations/redeem',
    summary:
      "Accept an invitation with the code from its mail and a password (the new account's; or, for an email that already has an account, its current password, which the person's own session as Authorization: Bearer may replace); answers a session in the invitation's organisation.",
    tag: 'Authentication',
    organisation: false,
    operation: `mutation RedeemInvitation($input: RedeemInvitationInput!) {
      redeemInvitation(input: $input) { session { accessToken refreshToken expiresAt user { id email firstName lastName } } }
    }`,
    // Whether the password may be left out depends on the caller (their own session may stand in for
    // it): the service validates the body with that knowledge and names every missing field.
    body: redeemInvitationInput.partial(),
    bind: { input: 'body' },
    result: (data) => data.redeemInvitation.session,
    replay: 'never',
    response: signInResult,
  },
];
