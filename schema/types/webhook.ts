import type { RequestContext } from '../../src/context.ts';
import {
  getWebhookDelivery,
  listWebhookDeliveries,
  resendWebhookDelivery,
  type AttemptView,
  type DeliveryView,
} from '../../src/services/webhook-deliveries.ts';
import {
  createWebhookEndpoint,
  createWebhookEndpointInput,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  listWebhookEventTypes,
  recoverWebhookEndpoint,
  recoverWebhookEndpointInput,
  rotateWebhookEndpointSecret,
  rotateWebhookEndpointSecretInput,
  testWebhookEndpoint,
  updateWebhookEndpoint,
  updateWebhookEndpointInput,
  type WebhookRecovery,
} from '../../src/services/webhook-endpoints.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { allDeliveryAttempts, deliveryAttempts, endpointDeliveries } from '../../src/services/child-lists.ts';
import { related } from '../../src/services/related.ts';
import { Node } from '../node.ts';
import { inputFrom } from '../input.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { describeEnumStatuses, statusEnum, valuesEnum } from './common.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';
import {
  RECOVERIES_PER_ENDPOINT_PER_HOUR,
  RECOVERIES_PER_ORGANISATION_PER_HOUR,
  RECOVERY_MAX_DELIVERIES,
  RECOVERY_STEP_INTERVAL_MS,
  RECOVERY_STEP_SIZE,
  RESENDS_PER_ENDPOINT_PER_MINUTE,
  RESENDS_PER_ORGANISATION_PER_MINUTE,
} from '../../src/webhooks/operator-limits.ts';

const READ = { $all: { organisation: true, permission: 'webhooks.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'webhooks.write' } } as const;

/** Rows of an account are visible to holders of webhooks.read or webhooks.write on it. */
const mayRead = (accountId: string, ctx: RequestContext) =>
  ctx.access.allows('webhooks', 'read', accountId) || ctx.access.allows('webhooks', 'write', accountId);

const WebhookEventTypeInfo = builder.objectRef<{ type: string; description: string }>('WebhookEventType').implement({
  description: 'A kind of change announced by webhooks.',
  fields: (t) => ({
    type: t.exposeString('type', { description: 'Name, such as order.confirmed; the `type` of delivered envelopes.' }),
    description: t.exposeString('description', { description: 'When it is sent.' }),
  }),
});

const WebhookSignatureScheme = valuesEnum('WebhookSignatureScheme', 'How deliveries to an endpoint are signed.', {
  service: 'Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body"> keyed with the secret (Stripe-style; the default).',
  standard:
    'Standard Webhooks as well: webhook-id (the source event, wev_), webhook-timestamp and webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body"> keyed with the base64 bytes of the secret. Service-* headers are sent too.',
});

const WebhookOrdering = valuesEnum('WebhookOrdering', 'Whether deliveries of one object wait for each other.', {
  none: 'Deliveries are sent as they come, in parallel (the default); payloads carry `sequence` to tell stale ones.',
  per_object:
    'Deliveries of one object (an order with its ticket events, a customer, an event) reach the endpoint one at a time in sequence order; other objects flow in parallel. A failing delivery holds only its own object’s later ones until it succeeds or fails for good.',
});

export const WebhookEndpoint = builder.prismaObject('WebhookEndpoint', {
  interfaces: [Node],
  description: 'A URL of one account that receives signed webhook deliveries (whe_). Its signing secret is shown once, when it is created.',
  authScopes: (endpoint, ctx) => mayRead(endpoint.accountId, ctx),
  fields: (t) => ({
    accountId: t.exposeID('accountId', { description: 'The account whose events it receives.' }),
    account: t.field(accountRelation()),
    url: t.expose('url', { type: 'URL', description: 'Where deliveries are POSTed (http or https, normalised).' }),
    description: t.exposeString('description', { nullable: true, description: 'Free text (at most 500 characters), or null.' }),
    eventTypes: t.exposeStringList('eventTypes', { description: 'Subscribed event types; empty = every type.' }),
    enabled: t.exposeBoolean('enabled', { description: 'Whether new events are delivered to it.' }),
    disabledReason: t.exposeString('disabledReason', {
      nullable: true,
      description:
        'Why the service disabled it (every attempt failed for WEBHOOK_DISABLE_AFTER, 5 days by default), or null. Enabling it again (enabled: true) clears it.',
    }),
    rotationOverlapEndsAt: t.expose('previousSecretExpiresAt', {
      type: 'DateTime',
      nullable: true,
      description:
        'After a signing secret rotation: until when deliveries are also signed with the previous secret (a second v1= in Service-Signature); null when only the current one signs.',
    }),
    apiVersion: t.exposeString('apiVersion', {
      description: 'Payload version (YYYY-MM-DD) pinned at creation; payloads are transformed down to it.',
    }),
    signatureScheme: t.field({
      type: WebhookSignatureScheme,
      description: 'How its deliveries are signed: SERVICE (Service-Signature) or STANDARD (Standard Webhooks headers as well).',
      resolve: (endpoint) => endpoint.signatureScheme as 'service' | 'standard',
    }),
    ordering: t.field({
      type: WebhookOrdering,
      description: 'NONE, or PER_OBJECT: deliveries of one object reach it one at a time, in sequence order.',
      resolve: (endpoint) => endpoint.ordering as 'none' | 'per_object',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const CreatedWebhookEndpoint = builder.objectRef<Awaited<ReturnType<typeof createWebhookEndpoint>>>('CreatedWebhookEndpoint').implement({
  description: 'A new webhook endpoint and its signing secret, which is never shown again.',
  fields: (t) => ({
    endpoint: t.field({ type: WebhookEndpoint, description: 'The endpoint.', resolve: (r) => r.endpoint }),
    secret: t.exposeString('secret', {
      description: 'Signing secret (whsec_...): the HMAC-SHA256 key of the Service-Signature header. Store it now.',
    }),
  }),
});

const RotatedWebhookEndpointSecret = builder
  .objectRef<Awaited<ReturnType<typeof rotateWebhookEndpointSecret>>>('RotatedWebhookEndpointSecret')
  .implement({
    description: 'A webhook endpoint with its new signing secret, which is never shown again.',
    fields: (t) => ({
      endpoint: t.field({ type: WebhookEndpoint, description: 'The endpoint, with rotationOverlapEndsAt.', resolve: (r) => r.endpoint }),
      secret: t.exposeString('secret', { description: 'The new signing secret (whsec_...). Store it now.' }),
    }),
  });

const WebhookRecoveryRef = builder.objectRef<WebhookRecovery>('WebhookRecovery').implement({
  description: `A recovery in progress: failed deliveries of an endpoint in a time range, sent again as manual attempts, oldest first, at most ${RECOVERY_MAX_DELIVERIES}, ${RECOVERY_STEP_SIZE} at a time every ${RECOVERY_STEP_INTERVAL_MS / 1000} s.`,
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The recovery (whr_ + the endpoint id; its workflow id in Temporal).' }),
    endpointId: t.exposeID('endpointId', { description: 'The endpoint (whe_).' }),
    endpoint: t.field({
      type: WebhookEndpoint,
      nullable: true,
      description: 'The endpoint, or null once deleted.',
      resolve: (recovery, _args, ctx) => related(ctx, 'webhookEndpoint', recovery.endpointId),
    }),
    url: t.expose('url', {
      type: 'URL',
      description: "Where it sends: the endpoint's URL when the recovery was asked for. Changing the endpoint's URL ends the recovery.",
    }),
    since: t.expose('since', { type: 'DateTime', description: 'Deliveries created from this time...' }),
    until: t.expose('until', { type: 'DateTime', description: '...up to this one (when the recovery was asked for).' }),
    deliveryCount: t.exposeInt('deliveryCount', {
      description: `Failed deliveries in the range it sends again, when it was asked for: those made for the endpoint's current URL (any URL with includeOtherUrls), at most ${RECOVERY_MAX_DELIVERIES}. Each gets one manual attempt.`,
    }),
    includedOtherUrlCount: t.exposeInt('includedOtherUrlCount', {
      description: 'Of deliveryCount, the deliveries made for another URL than the current one (only with includeOtherUrls; else 0).',
    }),
    skippedOtherUrlCount: t.exposeInt('skippedOtherUrlCount', {
      description:
        'Failed deliveries in the range made for another URL than the current one, left out (0 with includeOtherUrls). Ask again with includeOtherUrls: true to send them to the current URL.',
    }),
    remainingCount: t.exposeInt('remainingCount', {
      description: `Failed deliveries in the range it would send but for the maximum of ${RECOVERY_MAX_DELIVERIES}: recover again once this recovery has finished.`,
    }),
  }),
});

const WebhookAttemptTrigger = valuesEnum('WebhookAttemptTrigger', 'What made an attempt.', {
  scheduled: 'The retry schedule (the first attempt included).',
  manual: 'A resend or a recovery.',
});

const WebhookDeliveryStatus = statusEnum('WebhookDeliveryStatus', 'delivery', 'Where a delivery stands.', {
  pending: 'Not yet acknowledged; attempts continue on the retry schedule.',
  succeeded: 'The receiver answered 2xx.',
  failed: 'Every attempt failed; no more attempts are made.',
});

const WebhookAttempt = builder.objectRef<AttemptView>('WebhookAttempt').implement({
  interfaces: [Node],
  description: 'One try at sending a delivery (wha_).',
  authScopes: (attempt, ctx) => mayRead(attempt.accountId, ctx),
  fields: (t) => ({
    attemptNumber: t.exposeInt('attemptNumber', { description: 'Position among the attempts of the delivery, from 1.' }),
    trigger: t.field({
      type: WebhookAttemptTrigger,
      description: 'SCHEDULED, or MANUAL (a resend or a recovery).',
      resolve: (a) => a.trigger,
    }),
    attemptedAt: t.expose('attemptedAt', { type: 'DateTime', description: 'When the request was sent.' }),
    statusCode: t.exposeInt('statusCode', {
      nullable: true,
      description: 'HTTP status answered, or null when none came (timeout, refused).',
    }),
    responseBody: t.exposeString('responseBody', { nullable: true, description: 'First 4 KiB of the response body, or null.' }),
    durationMs: t.exposeInt('durationMs', { description: 'Milliseconds from sending to the answer or the failure.' }),
    error: t.exposeString('error', { nullable: true, description: 'What went wrong, or null when the receiver answered 2xx.' }),
  }),
});

const WebhookAttemptConnection = pagedConnection(WebhookAttempt, 'WebhookAttemptConnection', 'attempts');

/** A delivery as a use case answers it (with its attempts), or as `WebhookEndpoint.deliveries` reads it (without). */
type DeliveryRow = Omit<DeliveryView, 'attempts'> & { attempts?: AttemptView[] };

export const WebhookDelivery = builder.objectRef<DeliveryRow>('WebhookDelivery').implement({
  interfaces: [Node],
  description: 'One source event sent to one endpoint (whd_, the Service-Delivery-Id), with every attempt.',
  authScopes: (delivery, ctx) => mayRead(delivery.accountId, ctx),
  fields: (t) => ({
    endpointId: t.exposeID('endpointId', { description: 'The receiving endpoint (whe_).' }),
    endpoint: t.field({
      type: WebhookEndpoint,
      nullable: true,
      description: 'The receiving endpoint, or null once deleted.',
      resolve: (delivery, _args, ctx) => related(ctx, 'webhookEndpoint', delivery.endpointId),
    }),
    eventId: t.exposeID('eventId', { description: 'The source event (wev_, the Service-Event-Id), shared by its deliveries.' }),
    eventType: t.exposeString('eventType', { description: 'Event type, such as order.confirmed.' }),
    url: t.expose('url', {
      type: 'URL',
      description:
        "The endpoint's URL when the delivery was recorded: what it was made for. A recovery sends it again only while the endpoint still has this URL, unless asked to include other URLs.",
    }),
    status: t.field({ type: WebhookDeliveryStatus, description: `${describeEnumStatuses('delivery')}.`, resolve: (d) => d.status }),
    attemptCount: t.exposeInt('attemptCount', { description: 'Attempts made so far.' }),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true, description: 'When the next attempt is due, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the delivery was recorded.' }),
    attempts: t.field({
      type: WebhookAttemptConnection,
      nullable: true,
      description: 'A page of its attempts, oldest first; null, with an error, where you may not read webhooks on its account.',
      args: t.arg.connectionArgs(),
      resolve: (delivery, args, ctx) => {
        if (!ctx.access.allows('webhooks', 'read', delivery.accountId)) throw missingRight(ctx);
        return deliveryAttempts(ctx, delivery.id, args);
      },
    }),
    // Attempts are not bounded (manual resends add to the schedule's), so an admin screen pages
    // `attempts`; /v1 answers a delivery with all of them, from this list.
    allAttempts: t.field({
      type: [WebhookAttempt],
      description: 'Every attempt, oldest first, in one list: what /v1 answers with a delivery. A screen pages `attempts`.',
      resolve: (delivery, _args, ctx) => delivery.attempts ?? allDeliveryAttempts(ctx, delivery.id),
    }),
  }),
});

const WebhookDeliveryConnection = pagedConnection(WebhookDelivery, 'WebhookDeliveryConnection', 'webhook deliveries');

builder.prismaObjectField(WebhookEndpoint, 'deliveries', (t) =>
  t.field({
    type: WebhookDeliveryConnection,
    nullable: true,
    description:
      'Its deliveries, newest first, as webhookDeliveries(endpointId:) lists them; null, with an error, where you may not read webhooks on its account.',
    args: t.arg.connectionArgs(),
    resolve: (endpoint, args, ctx) => {
      if (!ctx.access.allows('webhooks', 'read', endpoint.accountId)) throw missingRight(ctx);
      return endpointDeliveries(ctx, endpoint.id, args);
    },
  }),
);

const CreateWebhookEndpointInput = inputFrom('CreateWebhookEndpointInput', createWebhookEndpointInput, {
  description: 'A new webhook endpoint.',
  fields: {
    accountId: 'Owning account (acc_): not deleted, and you need webhooks.write on it.',
    url: 'http or https URL, at most 2048 characters, without user name or password; private, loopback and link-local targets are refused unless WEBHOOK_ALLOW_PRIVATE_URLS is set.',
    description: 'Free text, at most 500 characters.',
    eventTypes: 'Event types to receive (see webhookEventTypes); omitted or empty = every type.',
    apiVersion: 'Payload version to pin (YYYY-MM-DD, known and not sunset); default the current version. It cannot change later.',
    signatureScheme: 'How deliveries are signed: SERVICE (default) or STANDARD (Standard Webhooks headers as well).',
    ordering: 'NONE (default), or PER_OBJECT: deliveries of one object reach it one at a time, in sequence order.',
  },
});

const UpdateWebhookEndpointInput = inputFrom('UpdateWebhookEndpointInput', updateWebhookEndpointInput, {
  description: 'Changes to a webhook endpoint; omitted fields stay.',
  fields: {
    url: 'New URL, checked like on creation.',
    description: 'Free text, at most 500 characters; null clears it.',
    eventTypes: 'Replaces the subscribed event types; empty = every type.',
    enabled: 'false stops new deliveries to it; true resumes them, clears disabledReason and closes its circuit breaker.',
    signatureScheme:
      'SERVICE or STANDARD, from the next attempt on. STANDARD needs a secret in standard base64 (any issued since Standard Webhooks signing exists): an older one answers CONFLICT; rotate it first.',
    ordering:
      'NONE or PER_OBJECT. PER_OBJECT orders deliveries recorded from now on; NONE lets deliveries waiting for an earlier one of their object go at once.',
    // The schema takes only null here; the graph names the field's kind of value.
    rotationOverlapEndsAt: {
      type: 'DateTime',
      description: 'Only null: ends the overlap of the last secret rotation now (the previous secret stops signing).',
    },
  },
});

const RotateWebhookEndpointSecretInput = inputFrom('RotateWebhookEndpointSecretInput', rotateWebhookEndpointSecretInput, {
  description: 'How a signing secret is replaced.',
  fields: {
    overlapSeconds:
      'How long the previous secret keeps signing beside the new one, in seconds: 0 to 604800 (7 days), default 86400 (24 hours).',
  },
});

const RecoverWebhookEndpointInput = inputFrom('RecoverWebhookEndpointInput', recoverWebhookEndpointInput, {
  description: 'Which failed deliveries to send again.',
  fields: {
    since: 'ISO 8601 date and time: deliveries created from then until now; not in the future, at most WEBHOOK_RETENTION (30 days) ago.',
    includeOtherUrls:
      'true also sends deliveries made while the endpoint had another URL, to its current URL (their data was meant for the old one: confirm it belongs to the same receiver). Omitted or false: only deliveries made for the current URL; the others are counted in skippedOtherUrlCount.',
  },
});

const WebhookEndpointConnection = pagedConnection(WebhookEndpoint, 'WebhookEndpointConnection', 'webhook endpoints');

builder.queryFields((t) => ({
  webhookEventTypes: t.field({
    type: [WebhookEventTypeInfo],
    nullable: true,
    description: 'The event types webhooks announce (GET /v1/webhook-event-types); any credential of the organisation.',
    authScopes: { organisation: true },
    resolve: () => listWebhookEventTypes(),
  }),
  webhookEndpoints: t.field({
    type: WebhookEndpointConnection,
    nullable: true,
    description: 'A page of the webhook endpoints of the accounts you may read, oldest first (GET /v1/webhook-endpoints).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      accountId: t.arg.id({ description: 'Only this account.' }),
      updatedSince: updatedSinceArg(t, 'endpoints created or changed (edited, disabled after failing, re-enabled)'),
    },
    resolve: (_root, args, ctx) => listWebhookEndpoints(ctx, args),
  }),
  webhookEndpoint: t.field({
    type: WebhookEndpoint,
    nullable: true,
    description: 'One webhook endpoint (GET /v1/webhook-endpoints/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }) },
    resolve: (_root, { id }, ctx) => getWebhookEndpoint(ctx, id),
  }),
  webhookDelivery: t.field({
    type: WebhookDelivery,
    nullable: true,
    description: 'One delivery with its attempts (GET /v1/webhook-deliveries/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Delivery id (whd_).' }) },
    resolve: (_root, { id }, ctx) => getWebhookDelivery(ctx, id),
  }),
  webhookDeliveries: t.field({
    type: WebhookDeliveryConnection,
    nullable: true,
    description: 'Deliveries on the accounts you may read, newest first, with their attempts (GET /v1/webhook-deliveries).',
    authScopes: READ,
    args: {
      ...t.arg.connectionArgs(),
      ...pageArgsFor(t),
      endpointId: t.arg.id({ description: 'Only deliveries to this endpoint (whe_).' }),
      status: t.arg({ type: WebhookDeliveryStatus, description: 'Only deliveries in this status.' }),
      eventType: t.arg.string({ description: 'Only deliveries of this event type.' }),
      createdAfter: t.arg({ type: 'DateTime', description: 'Only deliveries recorded at or after this instant.' }),
      createdBefore: t.arg({ type: 'DateTime', description: 'Only deliveries recorded at or before this instant.' }),
      updatedSince: updatedSinceArg(t, 'deliveries recorded or changed (an attempt made, settled, put back for later)'),
    },
    resolve: (_root, args, ctx) => listWebhookDeliveries(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.field({
    ...payload(
      'CreateWebhookEndpoint',
      'createdWebhookEndpoint',
      CreatedWebhookEndpoint,
      'The endpoint registered, with its signing secret.',
    ),
    description: 'Registers a webhook endpoint (POST /v1/webhook-endpoints); the answer carries its signing secret, shown only this once.',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateWebhookEndpointInput, required: true, description: 'The endpoint.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createWebhookEndpoint(ctx, input)),
  }),
  updateWebhookEndpoint: t.field({
    ...payload('UpdateWebhookEndpoint', 'webhookEndpoint', WebhookEndpoint, 'The endpoint as changed.'),
    description: 'Changes a webhook endpoint (PATCH /v1/webhook-endpoints/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }),
      input: t.arg({ type: UpdateWebhookEndpointInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateWebhookEndpoint(ctx, id, input)),
  }),
  deleteWebhookEndpoint: t.field({
    ...deletePayload('DeleteWebhookEndpoint', 'webhook endpoint'),
    description:
      'Deletes a webhook endpoint (DELETE /v1/webhook-endpoints/{id}): it answers NOT_FOUND from then on, receives nothing new, and its pending deliveries stop.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }) },
    resolve: (_root, { id }, ctx) => deleted(ctx, () => deleteWebhookEndpoint(ctx, id)),
  }),
  rotateWebhookEndpointSecret: t.field({
    ...payload('RotateWebhookEndpointSecret', 'rotatedSecret', RotatedWebhookEndpointSecret, 'The endpoint with its new signing secret.'),
    description:
      'Replaces the signing secret of a webhook endpoint (POST /v1/webhook-endpoints/{id}/rotate-secret); the new one is answered this once. During the overlap deliveries carry one v1= signature per valid secret.',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }),
      input: t.arg({ type: RotateWebhookEndpointSecretInput, description: 'The overlap; omitted = 24 hours.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => rotateWebhookEndpointSecret(ctx, id, input ?? {})),
  }),
  recoverWebhookEndpoint: t.field({
    ...payload('RecoverWebhookEndpoint', 'webhookRecovery', WebhookRecoveryRef, 'The recovery started.'),
    description: `Sends the failed deliveries of the endpoint created since a time again, as manual attempts, in the background (POST /v1/webhook-endpoints/{id}/recover): those made for its current URL (any URL with includeOtherUrls), oldest first, at most ${RECOVERY_MAX_DELIVERIES}, ${RECOVERY_STEP_SIZE} at a time every ${RECOVERY_STEP_INTERVAL_MS / 1000} s. One recovery per endpoint at a time (CONFLICT while one runs), at most ${RECOVERIES_PER_ENDPOINT_PER_HOUR} an hour per endpoint and ${RECOVERIES_PER_ORGANISATION_PER_HOUR} per organisation (RATE_LIMITED beyond); a disabled endpoint answers CONFLICT.`,
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }),
      input: t.arg({ type: RecoverWebhookEndpointInput, required: true, description: 'Since when.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => recoverWebhookEndpoint(ctx, id, input)),
  }),
  resendWebhookDelivery: t.field({
    ...payload('ResendWebhookDelivery', 'webhookDelivery', WebhookDelivery, 'The delivery as it is, its manual attempt under way.'),
    description: `Sends a delivery again now, whatever its status, as a manual attempt with the same Service-Event-Id (POST /v1/webhook-deliveries/{id}/resend). Answers the delivery as it is; the attempt appears among its attempts once made (later while its endpoint is busy). At most ${RESENDS_PER_ENDPOINT_PER_MINUTE} a minute per endpoint and ${RESENDS_PER_ORGANISATION_PER_MINUTE} per organisation (RATE_LIMITED beyond). A disabled endpoint answers CONFLICT.`,
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Delivery id (whd_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => resendWebhookDelivery(ctx, id), null),
  }),
  testWebhookEndpoint: t.field({
    ...payload('TestWebhookEndpoint', 'webhookDelivery', WebhookDelivery, 'The sample delivery sent.'),
    description:
      'Sends a signed sample delivery to this endpoint only (POST /v1/webhook-endpoints/{id}/test): a real source event of its first subscribed type (event.created when it takes every type) whose payload holds sample data (ids such as ord_sample0000000000000000; only accountId is real). A disabled endpoint answers CONFLICT.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Endpoint id (whe_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => testWebhookEndpoint(ctx, id), null),
  }),
}));
