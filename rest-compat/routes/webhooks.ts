import { z } from 'zod';
import { listQuery } from '../../src/pagination.ts';
import { listWebhookDeliveriesFilters } from '../../src/services/webhook-deliveries.ts';
import { listWebhookEventsFilters } from '../../src/services/webhook-events.ts';
import {
  createWebhookEndpointInput,
  listWebhookEndpointsFilters,
  recoverWebhookEndpointInput,
  rotateWebhookEndpointSecretInput,
  updateWebhookEndpointInput,
  webhookEventType,
  webhookOrdering,
  webhookSignatureScheme,
} from '../../src/services/webhook-endpoints.ts';
import type { RestRoute } from '../route.ts';
import type { AnswerReplay } from '../../src/http/idempotency.ts';
import { deleted, deletion, idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { STATUSES } from '../../src/statuses.ts';
import {
  RECOVERIES_PER_ENDPOINT_PER_HOUR,
  RECOVERIES_PER_ORGANISATION_PER_HOUR,
  RECOVERY_MAX_DELIVERIES,
  RECOVERY_STEP_INTERVAL_MS,
  RECOVERY_STEP_SIZE,
  RESENDS_PER_ENDPOINT_PER_MINUTE,
  RESENDS_PER_ORGANISATION_PER_MINUTE,
} from '../../src/webhooks/operator-limits.ts';

const ENDPOINT_FIELDS =
  'id accountId url description eventTypes enabled disabledReason apiVersion signatureScheme ordering rotationOverlapEndsAt createdAt updatedAt';
const DELIVERY_FIELDS = `id endpointId eventId eventType status attemptCount nextAttemptAt createdAt
  attempts: allAttempts { attemptNumber trigger attemptedAt statusCode responseBody durationMs error }`;

const DELIVERY_STATUSES = STATUSES.delivery;

const endpoint = z.object({
  id: z.string(),
  accountId: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  eventTypes: z.array(webhookEventType),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  apiVersion: z.string(),
  signatureScheme: webhookSignatureScheme,
  ordering: webhookOrdering,
  rotationOverlapEndsAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const attempt = z.object({
  attemptNumber: z.number().int(),
  trigger: z.enum(['scheduled', 'manual']),
  attemptedAt: z.string(),
  statusCode: z.number().int().nullable(),
  responseBody: z.string().nullable(),
  durationMs: z.number().int(),
  error: z.string().nullable(),
});

const delivery = z.object({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string(),
  eventType: webhookEventType,
  status: z.enum(DELIVERY_STATUSES),
  attemptCount: z.number().int(),
  nextAttemptAt: z.string().nullable(),
  createdAt: z.string(),
  attempts: z.array(attempt),
});

/** An answer holding the endpoint's signing secret: a retry is told where the endpoint is, not the secret again. */
const SECRET_ANSWER: AnswerReplay<readonly string[]> = {
  secrets: ['secret'],
  readWith: (answer) => {
    const { id } = (answer as { endpoint: { id: string } }).endpoint;
    return `The endpoint is GET /v1/webhook-endpoints/${id}; if its secret was lost, rotate it (POST /v1/webhook-endpoints/${id}/rotate-secret).`;
  },
};

export const webhooksRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/webhook-event-types',
    summary: 'List the event types webhooks announce, with what each means. Any credential of the organisation.',
    tag: 'Webhooks',
    organisation: true,
    operation: 'query WebhookEventTypes { webhookEventTypes { type description } }',
    result: (data) => ({ eventTypes: data.webhookEventTypes }),
    response: z.object({ eventTypes: z.array(z.object({ type: z.string(), description: z.string() })) }),
  },
  {
    method: 'GET',
    path: '/webhook-endpoints',
    summary: 'List the webhook endpoints of the accounts you may read (optionally one account), oldest first. Never shows secrets.',
    tag: 'Webhooks',
    organisation: true,
    operation: `query WebhookEndpoints($page: Int, $limit: Int, $accountId: ID) {
      webhookEndpoints(page: $page, limit: $limit, accountId: $accountId) { nodes { ${ENDPOINT_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    query: listQuery(listWebhookEndpointsFilters),
    bind: { '...': 'query' },
    result: (data) => ({ endpoints: data.webhookEndpoints.nodes, pagination: data.webhookEndpoints.pagination }),
    response: z.object({ endpoints: z.array(endpoint), pagination }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints',
    summary:
      'Register a webhook endpoint of an account. eventTypes omitted or empty = every type; apiVersion (payload version) defaults to the current one and is pinned. signatureScheme service (default) or standard (Standard Webhooks headers as well); ordering none (default) or per_object. Answers the signing secret (whsec_), shown only this once.',
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!) {
      createWebhookEndpoint(input: $input) { createdWebhookEndpoint { endpoint { ${ENDPOINT_FIELDS} } secret } }
    }`,
    body: createWebhookEndpointInput,
    bind: { input: 'body' },
    result: (data) => data.createWebhookEndpoint.createdWebhookEndpoint,
    replay: SECRET_ANSWER,
    status: 201,
    response: z.object({ endpoint, secret: z.string() }),
  },
  {
    method: 'GET',
    path: '/webhook-endpoints/{id}',
    summary: 'Get a webhook endpoint (without its secret).',
    tag: 'Webhooks',
    organisation: true,
    operation: `query WebhookEndpoint($id: ID!) { webhookEndpoint(id: $id) { ${ENDPOINT_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ endpoint: data.webhookEndpoint }),
    response: z.object({ endpoint }),
  },
  {
    method: 'PATCH',
    path: '/webhook-endpoints/{id}',
    summary:
      "Change the URL, description (null clears it), event types (empty = every type), enabled state, signatureScheme or ordering of a webhook endpoint. enabled: true also clears disabledReason and closes the circuit breaker; rotationOverlapEndsAt: null ends a secret rotation's overlap now.",
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation UpdateWebhookEndpoint($id: ID!, $input: UpdateWebhookEndpointInput!) {
      updateWebhookEndpoint(id: $id, input: $input) { webhookEndpoint { ${ENDPOINT_FIELDS} } }
    }`,
    params: idParam,
    body: updateWebhookEndpointInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ endpoint: data.updateWebhookEndpoint.webhookEndpoint }),
    response: z.object({ endpoint }),
  },
  {
    method: 'DELETE',
    path: '/webhook-endpoints/{id}',
    summary: 'Delete a webhook endpoint: it answers 404 from then on, receives nothing new, and its pending deliveries stop.',
    tag: 'Webhooks',
    organisation: true,
    operation: 'mutation DeleteWebhookEndpoint($id: ID!) { deleteWebhookEndpoint(id: $id) { deletedId } }',
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => deletion(data.deleteWebhookEndpoint),
    response: deleted,
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/{id}/test',
    summary:
      'Send a signed sample delivery to this endpoint only: an event of its first subscribed type (event.created when it takes every type) whose payload holds sample data (ids such as ord_sample0000000000000000; only accountId is real). A disabled endpoint answers 409.',
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation TestWebhookEndpoint($id: ID!) { testWebhookEndpoint(id: $id) { webhookDelivery { ${DELIVERY_FIELDS} } } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ delivery: data.testWebhookEndpoint.webhookDelivery }),
    status: 201,
    response: z.object({ delivery }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/{id}/rotate-secret',
    summary:
      'Replace the signing secret; the new one (whsec_) is answered this once. For overlapSeconds (0 to 604800, default 86400) deliveries carry a second v1= signature made with the previous secret; PATCH rotationOverlapEndsAt: null ends the overlap early.',
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation RotateWebhookEndpointSecret($id: ID!, $input: RotateWebhookEndpointSecretInput) {
      rotateWebhookEndpointSecret(id: $id, input: $input) { rotatedSecret { endpoint { ${ENDPOINT_FIELDS} } secret } }
    }`,
    params: idParam,
    body: rotateWebhookEndpointSecretInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => data.rotateWebhookEndpointSecret.rotatedSecret,
    replay: SECRET_ANSWER,
    response: z.object({ endpoint, secret: z.string() }),
  },
  {
    method: 'POST',
    path: '/webhook-endpoints/{id}/recover',
    summary: `Send the failed deliveries of this endpoint created since a time (ISO 8601, at most WEBHOOK_RETENTION ago) again, as manual attempts, in the background (202): those made for its current URL, or with includeOtherUrls: true also those made for a URL it had before; oldest first, at most ${RECOVERY_MAX_DELIVERIES}, ${RECOVERY_STEP_SIZE} at a time every ${RECOVERY_STEP_INTERVAL_MS / 1000} s. The answer counts the deliveries sent, those left out for another URL (skippedOtherUrlCount) and those beyond the maximum (remainingCount). One recovery per endpoint at a time (409 while one runs); at most ${RECOVERIES_PER_ENDPOINT_PER_HOUR} an hour per endpoint and ${RECOVERIES_PER_ORGANISATION_PER_HOUR} per organisation (429 RATE_LIMITED with Retry-After beyond); a disabled endpoint answers 409.`,
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation RecoverWebhookEndpoint($id: ID!, $input: RecoverWebhookEndpointInput!) {
      recoverWebhookEndpoint(id: $id, input: $input) {
        webhookRecovery { id endpointId url since until deliveryCount includedOtherUrlCount skippedOtherUrlCount remainingCount }
      }
    }`,
    params: idParam,
    body: recoverWebhookEndpointInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ recovery: data.recoverWebhookEndpoint.webhookRecovery }),
    status: 202,
    response: z.object({
      recovery: z.object({
        id: z.string(),
        endpointId: z.string(),
        url: z.string(),
        since: z.string(),
        until: z.string(),
        deliveryCount: z.number().int(),
        includedOtherUrlCount: z.number().int(),
        skippedOtherUrlCount: z.number().int(),
        remainingCount: z.number().int(),
      }),
    }),
  },
  {
    method: 'GET',
    path: '/webhook-deliveries/{id}',
    summary: 'Get a webhook delivery with every attempt (oldest first).',
    tag: 'Webhooks',
    organisation: true,
    operation: `query WebhookDelivery($id: ID!) { webhookDelivery(id: $id) { ${DELIVERY_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ delivery: data.webhookDelivery }),
    response: z.object({ delivery }),
  },
  {
    method: 'POST',
    path: '/webhook-deliveries/{id}/resend',
    summary: `Send a delivery again now, whatever its status, as a manual attempt (same Service-Event-Id and Service-Delivery-Id), in the background (202): the attempt appears among its attempts once made (later while its endpoint is busy). A success settles it as succeeded. At most ${RESENDS_PER_ENDPOINT_PER_MINUTE} a minute per endpoint and ${RESENDS_PER_ORGANISATION_PER_MINUTE} per organisation (429 RATE_LIMITED with Retry-After beyond). A disabled endpoint answers 409.`,
    tag: 'Webhooks',
    organisation: true,
    operation: `mutation ResendWebhookDelivery($id: ID!) { resendWebhookDelivery(id: $id) { webhookDelivery { ${DELIVERY_FIELDS} } } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ delivery: data.resendWebhookDelivery.webhookDelivery }),
    status: 202,
    response: z.object({ delivery }),
  },
  {
    method: 'GET',
    path: '/webhook-deliveries',
    summary: `List webhook deliveries on the accounts you may read, newest first, each with every attempt (oldest first). Filters: endpointId, status (${STATUSES.delivery.join(', ')}), eventType.`,
    tag: 'Webhooks',
    organisation: true,
    operation: `query WebhookDeliveries($page: Int, $limit: Int, $endpointId: ID, $status: WebhookDeliveryStatus, $eventType: String) {
      webhookDeliveries(page: $page, limit: $limit, endpointId: $endpointId, status: $status, eventType: $eventType) {
        nodes { ${DELIVERY_FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(listWebhookDeliveriesFilters),
    bind: { '...': 'query' },
    result: (data) => ({ deliveries: data.webhookDeliveries.nodes, pagination: data.webhookDeliveries.pagination }),
    response: z.object({ deliveries: z.array(delivery), pagination }),
  },
  {
    method: 'GET',
    path: '/webhook-events',
    summary:
      'List the source events (wev_) of the accounts you may read webhooks on, newest first, created within WEBHOOK_RETENTION, each with its data at the resolved version and its deliveries: what webhooks announced, read instead of received (endpoint test samples too). Filters: type, createdAfter (an ISO 8601 instant; events strictly after it), createdBefore (events at or before it), deliverySuccess (false: a delivery pending or failed; true: every delivery succeeded).',
    tag: 'Webhooks',
    organisation: true,
    operation: `query WebhookEvents($page: Int, $limit: Int, $type: String, $createdAfter: DateTime, $createdBefore: DateTime, $deliverySuccess: Boolean) {
      webhookEvents(page: $page, limit: $limit, type: $type, createdAfter: $createdAfter, createdBefore: $createdBefore, deliverySuccess: $deliverySuccess) {
        nodes { id type createdAt accountId data deliveries { id endpointId status } } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(listWebhookEventsFilters),
    bind: { '...': 'query' },
    result: (data) => ({ webhookEvents: data.webhookEvents.nodes, pagination: data.webhookEvents.pagination }),
    // `data` is shaped at the request's version by the use case (it knows the version each event was
    // stored at), so it is not marked versioned() here: the route's answer is not shaped again.
    response: z.object({
      webhookEvents: z.array(
        z.object({
          id: z.string(),
          type: webhookEventType,
          createdAt: z.string(),
          accountId: z.string(),
          data: z
            .record(z.string(), z.unknown())
            .describe("The event's payload (docs/webhooks.md) as the resolved version shows it, as a delivery at that version carries it."),
          deliveries: z.array(z.object({ id: z.string(), endpointId: z.string(), status: z.enum(DELIVERY_STATUSES) })),
        }),
      ),
      pagination,
    }),
  },
];
