import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Prisma, WebhookEndpoint } from '../generated/prisma/client.ts';
import type { TenantTransaction } from '../db/tenant.ts';
import { newId } from '../ids.ts';
import { CURRENT_VERSION, requireUsableVersion } from '../versions.ts';
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, WEBHOOK_TYPES, type WebhookEventType } from '../webhooks/event-types.ts';
import { withWebhooks } from '../webhooks/record.ts';
import { decryptSecret, encryptSecret, isStandardSecret, newSigningSecret, SIGNATURE_SCHEMES } from '../webhooks/secrets.ts';
import { assertDeliverableUrl, MAX_WEBHOOK_URL_LENGTH, parseWebhookUrl, UrlPolicyError } from '../net/url-policy.ts';
import { documentedAs } from '../limits/limits.ts';
import { describeDuration } from '../webhooks/recorder.ts';
import { RECOVERY_MAX_DELIVERIES } from '../webhooks/operator-limits.ts';
import { recoveryRunning, recoveryWorkflowId, startRecoveryWorkflow } from '../webhooks/starts.ts';
import { closeCircuit, countOperatorAction, temporalClient } from './webhook-workflows.ts';
import { owningAccount } from './accounts.ts';
import { instant } from '../time-zones.ts';
import { reference, validate } from '../validation.ts';
import { loadDelivery, type DeliveryView } from './webhook-deliveries.ts';
import { missingRight } from '../auth/refusal.ts';
import { changedSince, OLDEST_FIRST, type Page, type PolledListArgs, pageArgsOf, paginate } from '../pagination.ts';
import { auditedChange, changesBetween, recordAudit } from './audit.ts';

/**
 * Webhook endpoints (whe_): a URL of one account that receives signed deliveries of the event types
 * it subscribes to (none listed = every type), at the payload version it pinned when it was
 * created. The signing secret is shown once, at creation, and stored encrypted. Permission:
 * `webhooks.read` / `webhooks.write` on the endpoint's account.
 */

/** What a surface hands a service: any value per field; the service's schema checks them. */
type Raw<T> = { [K in keyof T]?: unknown };

const url = documentedAs(
  z.string().superRefine((value, issue) => {
    try {
      parseWebhookUrl(value);
    } catch (error) {
      if (!(error instanceof UrlPolicyError)) throw error;
      issue.addIssue({ code: 'custom', message: error.message });
    }
  }),
  () => ({
    type: 'string',
    format: 'uri',
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    description: 'An https URL of a public host (the URL policy: no credentials, no private or reserved addresses).',
  }),
);

const description = z.string().trim().max(500, 'At most 500 characters.').nullish();

const EVENT_TYPE_NAMES = Object.keys(WEBHOOK_EVENT_TYPES) as [WebhookEventType, ...WebhookEventType[]];

/** One of the event types; an enum, so the OpenAPI document and GraphQL list them. */
export const webhookEventType = z.enum(EVENT_TYPE_NAMES, { error: `An event type: one of ${EVENT_TYPE_NAMES.join(', ')}.` });

const eventTypes = z
  .array(webhookEventType)
  .max(100)
  .transform((list) => [...new Set(list)] as WebhookEventType[]);

/**
 * The inputs below are the one schema of each operation: GraphQL's resolvers and /v1's bodies
 * (rest-compat/routes/webhooks.ts) both validate with them.
 */
/** How deliveries are signed (src/webhooks/secrets.ts). */
export const webhookSignatureScheme = z.enum(SIGNATURE_SCHEMES, { error: `One of ${SIGNATURE_SCHEMES.join(', ')}.` });

export const WEBHOOK_ORDERINGS = ['none', 'per_object'] as const;
export type WebhookOrdering = (typeof WEBHOOK_ORDERINGS)[number];
/** Whether deliveries of one object wait for each other (src/webhooks/ordering.ts). */
export const webhookOrdering = z.enum(WEBHOOK_ORDERINGS, { error: `One of ${WEBHOOK_ORDERINGS.join(', ')}.` });

export const createWebhookEndpointInput = z.strictObject({
  accountId: reference,
  url,
  description,
  eventTypes: eventTypes.nullish(),
  apiVersion: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'A dated version, YYYY-MM-DD.')
    .nullish(),
  signatureScheme: webhookSignatureScheme.nullish(),
  ordering: webhookOrdering.nullish(),
});

export const updateWebhookEndpointInput = z.strictObject({
  url: url.optional(),
  description,
  eventTypes: eventTypes.optional(),
  enabled: z.boolean().optional(),
  signatureScheme: webhookSignatureScheme.optional(),
  ordering: webhookOrdering.optional(),
  rotationOverlapEndsAt: z.null({ error: 'Only null, which ends the overlap of the last secret rotation now.' }).optional(),
});

/** The longest overlap of a secret rotation: a week. */
const MAX_OVERLAP_SECONDS = 7 * 86_400;
const DEFAULT_OVERLAP_SECONDS = 86_400;

export const rotateWebhookEndpointSecretInput = z.strictObject({
  overlapSeconds: z
    .number({ error: 'A whole number of seconds.' })
    .int('A whole number of seconds.')
    .min(0, 'At least 0 (0 = the previous secret stops at once).')
    .max(MAX_OVERLAP_SECONDS, `At most ${MAX_OVERLAP_SECONDS} (7 days).`)
    .nullish(),
});

export const recoverWebhookEndpointInput = z.strictObject({
  since: instant,
  includeOtherUrls: z.boolean({ error: 'true or false.' }).nullish(),
});

export type CreateWebhookEndpointInput = Raw<z.input<typeof createWebhookEndpointInput>>;
export type UpdateWebhookEndpointInput = Raw<z.input<typeof updateWebhookEndpointInput>>;
export type RotateWebhookEndpointSecretInput = Raw<z.input<typeof rotateWebhookEndpointSecretInput>>;
export type RecoverWebhookEndpointInput = Raw<z.input<typeof recoverWebhookEndpointInput>>;

/** The full URL policy; a refusal names `url`. */
async function deliverableUrl(ctx: RequestContext, raw: string): Promise<string> {
  try {
    const checked = await assertDeliverableUrl(raw, { allowPrivate: ctx.runtime.config.WEBHOOK_ALLOW_PRIVATE_URLS });
    return checked.href;
  } catch (error) {
    if (error instanceof UrlPolicyError) throw AppError.validation([{ path: 'url', message: error.message }]);
    throw error;
  }
}

/**
 * A non-deleted endpoint the caller may `action`: one they may neither read nor write is 404 (its
 * existence is not confirmed); one they may read but not change is FORBIDDEN for staff, 404 else.
 */
async function loadEndpoint(ctx: RequestContext, id: string, action: 'read' | 'write'): Promise<WebhookEndpoint> {
  const endpoint = await ctx.db.webhookEndpoint.findFirst({ where: { id, deletedAt: null } });
  const read =
    endpoint && (ctx.access.allows('webhooks', 'read', endpoint.accountId) || ctx.access.allows('webhooks', 'write', endpoint.accountId));
  if (!endpoint || !read) throw AppError.notFound('Webhook endpoint not found.');
  if (!ctx.access.allows('webhooks', action, endpoint.accountId)) throw missingRight(ctx);
  return endpoint;
}

export function listWebhookEventTypes(): Array<{ type: WebhookEventType; description: string }> {
  return Object.entries(WEBHOOK_EVENT_TYPES).map(([type, text]) => ({ type: type as WebhookEventType, description: text }));
}

/** Endpoints of the accounts the caller may read (optionally one of them), oldest first. */
export const listWebhookEndpointsFilters = z.object({ accountId: reference.nullish() });

/** A page of the webhook endpoints of the accounts the caller may read, oldest first. */
export async function listWebhookEndpoints(
  ctx: RequestContext,
  raw: PolledListArgs & Raw<z.input<typeof listWebhookEndpointsFilters>>,
): Promise<Page<WebhookEndpoint>> {
  const { page, filters: given } = pageArgsOf(raw);
  const { updatedSince, ...rawFilters } = given;
  const filters = validate(listWebhookEndpointsFilters, rawFilters);
  const readable = ctx.access.accountsFor('webhooks', 'read');
  const only = filters.accountId ?? undefined;
  const accountId = readable === 'all' ? only : { in: only ? readable.filter((account) => account === only) : readable };
  const where = { deletedAt: null, ...(accountId === undefined ? {} : { accountId }), ...changedSince(updatedSince) };
  return paginate(
    page,
    OLDEST_FIRST,
    (keyset) => ctx.db.webhookEndpoint.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.webhookEndpoint.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

export function getWebhookEndpoint(ctx: RequestContext, id: string): Promise<WebhookEndpoint> {
  return loadEndpoint(ctx, id, 'read');
}

/**
 * Registers an endpoint. The payload version defaults to the current one (docs/spec/service-spec.md §9:
 * endpoints pin the version current at creation); a known, non-sunset earlier one may be asked
 * for. Answers the endpoint and its signing secret, which is never shown again.
 */
export async function createWebhookEndpoint(
  ctx: RequestContext,
  raw: CreateWebhookEndpointInput,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const input = validate(createWebhookEndpointInput, raw);
  const apiVersion = input.apiVersion ? requireUsableVersion(input.apiVersion, 'apiVersion') : CURRENT_VERSION;
  const accountId = await owningAccount(ctx, 'webhooks', input.accountId);
  const href = await deliverableUrl(ctx, input.url);
  const secret = newSigningSecret();
  const limit = ctx.runtime.config.WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT;
  const endpoint = await ctx.db.$transaction(async (tx) => {
    // Counted under the account's lock, so concurrent creations cannot pass the limit together.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook endpoints of ${accountId}`}, 0))`;
    const existing = await tx.webhookEndpoint.count({ where: { accountId, deletedAt: null } });
    if (existing >= limit) {
      throw AppError.validation(
        [
          {
            path: 'accountId',
            message: `An account has at most ${limit} webhook endpoints (WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT); this one has ${existing}. Delete one first.`,
          },
        ],
        `Limit reached: at most ${limit} webhook endpoints per account.`,
      );
    }
    const created = await tx.webhookEndpoint.create({
      data: {
        id: newId('webhookEndpoint'),
        organisationId: ctx.organisation!.id,
        accountId,
        url: href,
        description: input.description || null,
        eventTypes: input.eventTypes ?? [],
        apiVersion,
        signatureScheme: input.signatureScheme ?? 'service',
        ordering: input.ordering ?? 'none',
        secretCiphertext: encryptSecret(secret, ctx.runtime.encryptionKey),
      },
    });
    await recordAudit(tx, ctx, {
      action: 'webhook_endpoint.created',
      targetId: created.id,
      accountId,
      changes: changesBetween(null, created),
    });
    return created;
  });
  return { endpoint, secret };
}

/** The circuit breaker and the failure clock, as for an endpoint that never failed. */
const HEALTHY: Prisma.WebhookEndpointUpdateInput = { consecutiveFailures: 0, failingSince: null, circuitOpenUntil: null };

/** An endpoint not deleted, as a change reads it under its lock (auditedChange). */
function endpointRow(id: string) {
  return {
    table: 'webhook_endpoints' as const,
    id,
    read: (tx: TenantTransaction) => tx.webhookEndpoint.findFirst({ where: { id, deletedAt: null } }),
  };
}

/**
 * Changes the URL, description (null clears it), event types ([] = every type), enabled state,
 * signature scheme or ordering, or ends a secret rotation's overlap (rotationOverlapEndsAt: null).
 * Enabling an endpoint (one the service disabled included) clears its disabledReason and starts it
 * afresh: its circuit closed, its failure clock reset. So does a new URL.
 *
 * A scheme or ordering applies from the next attempt and the next recorded delivery: pending
 * deliveries are signed as their endpoint says when each attempt is made. Ordering turned on orders
 * what is recorded from then on; turned off, it lets every delivery waiting for an earlier one of its
 * object go at once. `standard` needs a secret Standard Webhooks' verifiers can decode (every secret
 * issued since that scheme exists); an older one is refused with CONFLICT: rotate it first.
 */
export async function updateWebhookEndpoint(ctx: RequestContext, id: string, raw: UpdateWebhookEndpointInput): Promise<WebhookEndpoint> {
  const endpoint = await loadEndpoint(ctx, id, 'write');
  const input = validate(updateWebhookEndpointInput, raw);
  const data: Prisma.WebhookEndpointUpdateInput = {};
  if (input.url !== undefined) {
    data.url = await deliverableUrl(ctx, input.url);
  }
  if (input.description !== undefined) data.description = input.description || null;
  if (input.eventTypes !== undefined) data.eventTypes = input.eventTypes;
  if (input.enabled !== undefined) {
    data.enabled = input.enabled;
    data.disabledReason = null;
  }
  if (input.rotationOverlapEndsAt === null) Object.assign(data, { previousSecretCiphertext: null, previousSecretExpiresAt: null });
  if (input.signatureScheme !== undefined) {
    if (input.signatureScheme === 'standard' && !isStandardSecret(decryptSecret(endpoint.secretCiphertext, ctx.runtime.encryptionKey))) {
      throw new AppError(
        'CONFLICT',
        `This endpoint's signing secret predates Standard Webhooks signing and is not in the base64 form its verifiers decode; rotate it (POST /v1/webhook-endpoints/${id}/rotate-secret), then choose signatureScheme "standard".`,
      );
    }
    data.signatureScheme = input.signatureScheme;
  }
  if (input.ordering !== undefined) data.ordering = input.ordering;
  const released: string[] = [];
  const updated = await auditedChange(
    ctx,
    endpointRow(id),
    async (tx, before) => {
      // A new URL, or an endpoint enabled again (the service may have disabled it since the request
      // first read it), starts afresh: judged on the row as this change finds it.
      const fresh = (data.url !== undefined && data.url !== before.url) || (input.enabled === true && !before.enabled);
      const after = await tx.webhookEndpoint.update({ where: { id }, data: fresh ? { ...data, ...HEALTHY } : data });
      if (input.ordering === 'none' && before.ordering !== 'none') {
        // Nothing waits for an earlier delivery of its object any more: those waiting go now.
        const rows = await tx.$queryRaw<Array<{ id: string }>>`
          UPDATE webhook_deliveries SET "orderingKey" = NULL, "updatedAt" = now()
           WHERE "endpointId" = ${id} AND status = 'pending' AND "orderingKey" IS NOT NULL
          RETURNING id`;
        released.push(...rows.map((row) => row.id));
      }
      return after;
    },
    (after, before) => ({
      action:
        after.enabled !== before.enabled
          ? after.enabled
            ? 'webhook_endpoint.enabled'
            : 'webhook_endpoint.disabled'
          : 'webhook_endpoint.updated',
      targetId: id,
      accountId: after.accountId,
      changes: changesBetween(before, after),
    }),
  );
  // Those claimed already are in flight and unaffected; the others start as any new delivery.
  ctx.runtime.dispatcher.dispatch(released);
  return updated;
}

/**
 * Replaces the signing secret; the new one is answered this once. For `overlapSeconds` (default 24 h,
 * at most 7 days; 0 = none) deliveries carry a second `v1=` signature made with the secret replaced,
 * so receivers can switch at their pace; PATCH rotationOverlapEndsAt: null ends the overlap
 * early. Rotating again during an overlap drops the oldest secret: at most two sign.
 */
export async function rotateWebhookEndpointSecret(
  ctx: RequestContext,
  id: string,
  raw: RotateWebhookEndpointSecretInput,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  await loadEndpoint(ctx, id, 'write');
  const input = validate(rotateWebhookEndpointSecretInput, raw ?? {});
  const overlapSeconds = input.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
  const secret = newSigningSecret();
  // The secret replaced is read under the row's lock: of two rotations at once, the second keeps
  // the first's new secret as its previous one, so no secret handed out stops signing unannounced.
  const endpoint = await auditedChange(
    ctx,
    endpointRow(id),
    (tx, current) =>
      tx.webhookEndpoint.update({
        where: { id },
        data: {
          secretCiphertext: encryptSecret(secret, ctx.runtime.encryptionKey),
          previousSecretCiphertext: overlapSeconds > 0 ? current.secretCiphertext : null,
          previousSecretExpiresAt: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
        },
      }),
    (after, before) => ({
      action: 'webhook_endpoint.secret_rotated',
      targetId: id,
      accountId: after.accountId,
      changes: changesBetween(before, after),
    }),
  );
  return { endpoint, secret };
}

export interface WebhookRecovery {
  /** The recovery's workflow id in Temporal (whr_ + the endpoint's id). */
  id: string;
  endpointId: string;
  /** Where it sends: the endpoint's URL when it was asked for (a change of URL ends it). */
  url: string;
  since: Date;
  until: Date;
  /** Failed deliveries in [since, until] it sends again, when it was asked for (at most RECOVERY_MAX_DELIVERIES). */
  deliveryCount: number;
  /** Of those, the ones made for another URL than the endpoint's (includeOtherUrls). */
  includedOtherUrlCount: number;
  /** Failed deliveries in the range made for another URL, left out (without includeOtherUrls). */
  skippedOtherUrlCount: number;
  /** Failed deliveries in the range it would send but for RECOVERY_MAX_DELIVERIES: for a later recovery. */
  remainingCount: number;
}

/**
 * Sends the failed deliveries of the endpoint created since `since` (up to now) again, as manual
 * attempts, in the background (src/webhooks/manual.ts): those made for the endpoint's current URL,
 * or with `includeOtherUrls` those made for any URL it had; oldest first, at most
 * RECOVERY_MAX_DELIVERIES, RECOVERY_STEP_SIZE at a time a pause apart. The answer says how many
 * are sent, how many were left out for another URL and how many remain beyond the maximum. `since`
 * may go back as far as history is kept (WEBHOOK_RETENTION). One recovery per endpoint runs at a
 * time (CONFLICT while one does), at most RECOVERIES_PER_ENDPOINT_PER_HOUR per endpoint and
 * RECOVERIES_PER_ORGANISATION_PER_HOUR per organisation (RATE_LIMITED with Retry-After beyond); a
 * disabled endpoint is refused (CONFLICT). An open circuit is closed to half-open first: the
 * partner says the endpoint works again, so it is tried, one attempt at a time until one succeeds.
 */
export async function recoverWebhookEndpoint(ctx: RequestContext, id: string, raw: RecoverWebhookEndpointInput): Promise<WebhookRecovery> {
  const endpoint = await loadEndpoint(ctx, id, 'write');
  const { since, includeOtherUrls: anyUrl } = validate(recoverWebhookEndpointInput, raw);
  const includeOtherUrls = anyUrl === true;
  const until = new Date();
  const retention = ctx.runtime.config.WEBHOOK_RETENTION;
  if (since.getTime() > until.getTime()) throw AppError.validation([{ path: 'since', message: 'Not in the future.' }]);
  if (since.getTime() < until.getTime() - retention) {
    throw AppError.validation([
      { path: 'since', message: `At most ${describeDuration(retention)} ago (WEBHOOK_RETENTION): older deliveries are no longer kept.` },
    ]);
  }
  if (!endpoint.enabled) throw new AppError('CONFLICT', 'The endpoint is disabled; enable it to recover its deliveries.');
  const client = await temporalClient(ctx);
  if (await recoveryRunning(client, endpoint.id)) throw recoveryConflict();
  await countOperatorAction(ctx, 'recover', endpoint);
  const failed = { endpointId: endpoint.id, status: 'failed', createdAt: { gte: since, lte: until } } as const;
  const sent = includeOtherUrls ? failed : { ...failed, url: endpoint.url };
  const [first, matching, otherUrls] = await Promise.all([
    ctx.db.webhookDelivery.findMany({
      where: sent,
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: RECOVERY_MAX_DELIVERIES,
      select: { url: true },
    }),
    ctx.db.webhookDelivery.count({ where: sent }),
    ctx.db.webhookDelivery.count({ where: { ...failed, url: { not: endpoint.url } } }),
  ]);
  // The circuit and the entry in one transaction, committed before the workflow starts: its
  // attempts must find the circuit closed. The entry records that the operator asked for the
  // recovery (it runs in Temporal); of two asked at the same moment, the second's start is refused
  // (CONFLICT) after its entry.
  await ctx.db.$transaction(async (tx) => {
    await closeCircuit(tx, endpoint.id);
    await recordAudit(tx, ctx, {
      action: 'webhook_endpoint.recovered',
      targetId: endpoint.id,
      accountId: endpoint.accountId,
      changes: {
        since: { before: null, after: since.toISOString() },
        until: { before: null, after: until.toISOString() },
        includeOtherUrls: { before: null, after: includeOtherUrls },
      },
    });
  });
  const started = await startRecoveryWorkflow(client, ctx.runtime.logger, ctx.runtime.config.TEMPORAL_TASK_QUEUE, {
    organisationId: endpoint.organisationId,
    accountId: endpoint.accountId,
    endpointId: endpoint.id,
    since: since.toISOString(),
    until: until.toISOString(),
    url: endpoint.url,
    includeOtherUrls,
  });
  // Two requests at once: the second to start is refused all the same.
  if (started === 'already started') throw recoveryConflict();
  return {
    id: recoveryWorkflowId(endpoint.id),
    endpointId: endpoint.id,
    url: endpoint.url,
    since,
    until,
    deliveryCount: first.length,
    includedOtherUrlCount: first.filter((delivery) => delivery.url !== endpoint.url).length,
    skippedOtherUrlCount: includeOtherUrls ? 0 : otherUrls,
    remainingCount: matching - first.length,
  };
}

/**
 * Soft delete: the endpoint disappears (404, out of lists, no new deliveries) and the delivery
 * workflows of its pending deliveries stop at their next attempt (they check deletedAt).
 */
export async function deleteWebhookEndpoint(ctx: RequestContext, id: string): Promise<{ success: boolean; id: string }> {
  await loadEndpoint(ctx, id, 'write');
  await auditedChange(
    ctx,
    endpointRow(id),
    (tx) => tx.webhookEndpoint.update({ where: { id }, data: { deletedAt: new Date() } }),
    (after, before) => ({
      action: 'webhook_endpoint.deleted',
      targetId: id,
      accountId: after.accountId,
      changes: changesBetween(before, after),
    }),
  );
  return { success: true, id };
}

// ---------------------------------------------------------------------------------------------
// Test deliveries

/**
 * Sends a signed sample delivery to this endpoint only: records a source event (wev_) of the
 * endpoint's first subscribed type (event.created when it takes every type) with a sample payload
 * (see `sampleId`) and one delivery to this endpoint, in one transaction, then starts it. Other
 * endpoints of the account receive nothing. A disabled endpoint is refused (409): its deliveries
 * would never be sent.
 */
/** Test deliveries per endpoint per minute, counted across every API process. */
const TESTS_PER_MINUTE = 10;

export async function testWebhookEndpoint(ctx: RequestContext, id: string): Promise<DeliveryView> {
  const endpoint = await loadEndpoint(ctx, id, 'write');
  if (!endpoint.enabled) throw new AppError('CONFLICT', 'The endpoint is disabled; enable it to send a test delivery.');
  // Test deliveries cost a send each and could otherwise be fired at a slow receiver by the hundred.
  await ctx.runtime.rateLimiter.take(
    'webhook-test',
    endpoint.id,
    TESTS_PER_MINUTE,
    60_000,
    `At most ${TESTS_PER_MINUTE} test deliveries a minute per endpoint.`,
  );
  const type = endpoint.eventTypes.find(isWebhookEventType) ?? 'event.created';
  return withWebhooks(ctx.db, ctx.runtime.dispatcher, async (tx, webhooks) => {
    const [deliveryId] = await webhooks.record({
      organisationId: endpoint.organisationId,
      accountId: endpoint.accountId,
      type,
      payload: WEBHOOK_TYPES[type].sample(endpoint.accountId, new Date()),
      endpointId: endpoint.id,
    });
    // Disabled, deleted or unsubscribed since it was read above.
    if (!deliveryId) throw new AppError('CONFLICT', 'The endpoint changed meanwhile; look at it again and send the test.');
    await recordAudit(tx, ctx, {
      action: 'webhook_endpoint.tested',
      targetId: endpoint.id,
      accountId: endpoint.accountId,
      changes: { deliveryId: { before: null, after: deliveryId }, eventType: { before: null, after: type } },
    });
    return loadDelivery(tx, deliveryId);
  });
}

function recoveryConflict(): AppError {
  return new AppError('CONFLICT', 'A recovery of this endpoint is running; try again once it has finished.');
}
