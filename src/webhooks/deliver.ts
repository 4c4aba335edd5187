import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { systemRows } from '../db/sql.ts';
import { Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { isWebhookEventType } from './event-types.ts';
import { envelope, type Payload } from './payloads.ts';
import { decryptSecret, isStandardSecret, signatureHeader, standardSignatureHeader, type SignatureScheme } from './secrets.ts';
import { nextInLine, type Settled } from './ordering.ts';
import { recorderFor } from './recorder.ts';
import { attemptFinished, leaseId, slotReleased, waitForSlots } from './slots.ts';
import { assertDeliverableUrl, deliverableLookup, UrlPolicyError } from '../net/url-policy.ts';
import { webhookAttemptDuration, webhookAttempts, webhookDeliveries } from '../metrics.ts';
import { context, defaultTextMapSetter, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { tracer } from '../tracing.ts';

const TRACE_CONTEXT = new W3CTraceContextPropagator();

/**
 * One HTTP attempt of a webhook delivery (docs/spec/service-spec.md §6, docs/spec/contract.md "Webhook delivery"): the
 * first attempt of each delivery in its batch (batch.ts), a retry in the delivery's own workflow
 * (attemptDelivery below), or a manual attempt (manual.ts). Outside any request, so it uses the
 * runtime database handle, not a tenant-scoped one; the event and endpoint are joined on the
 * delivery's organisation (as the composite foreign keys are), so they can only be the delivery's
 * own organisation's.
 *
 * A failed HTTP exchange (status outside 2xx, redirect not followed, timeout, refused connection,
 * refused URL) is a returned result, never a thrown error: only infrastructure failures (the
 * database) throw, and Temporal retries those.
 *
 * Idempotent per attempt: a scheduled attempt is unique per (delivery, place in the schedule), a
 * manual one by its id, and an attempt found recorded is answered from its record, not sent again.
 * What remains is the window between the receiver's answer and the insert: a worker that dies
 * there has sent the attempt without recording it, and it is sent once more (same
 * Service-Event-Id and Service-Delivery-Id, a fresh signature timestamp). Receivers deduplicate on
 * Service-Event-Id (docs/spec/service-spec.md §6).
 *
 * Before sending, an attempt takes a slot (slots.ts: per-endpoint and per-organisation bounds and
 * the circuit breaker, shared by every worker through PostgreSQL); the statement that records it
 * gives the slot back and moves the endpoint's breaker and its automatic disabling.
 */

export const USER_AGENT = 'Service-Webhooks/1.0';
/** What is kept of a receiver's answer (docs/spec/contract.md: first 4 KiB). */
export const RESPONSE_BODY_LIMIT = 4096;

export type DeliveryConfig = Pick<
  Config,
  | 'WEBHOOK_ALLOW_PRIVATE_URLS'
  | 'WEBHOOK_ATTEMPT_TIMEOUT'
  | 'WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT'
  | 'WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION'
  | 'WEBHOOK_BREAKER_THRESHOLD'
  | 'WEBHOOK_BREAKER_COOLDOWN'
  | 'WEBHOOK_DISABLE_AFTER'
>;

export interface DeliverDependencies {
  db: Database;
  config: DeliveryConfig;
  encryptionKey: Buffer;
  logger: Logger;
  /** Starts deliveries that may go now (the next of an ordered object, ordering.ts); absent = the sweep does. */
  release?: (deliveryIds: readonly string[]) => Promise<void>;
}

/**
 * After a delivery of an ordered endpoint settled: starts the next delivery of its object. Never
 * throws: what is not started here the dispatcher's sweep claims within seconds.
 */
export async function releaseNext(deps: Pick<DeliverDependencies, 'db' | 'logger' | 'release'>, settled: Settled): Promise<void> {
  if (!deps.release || settled.orderingKey === null) return;
  try {
    const next = await nextInLine(deps.db, settled);
    if (next.length > 0) await deps.release(next);
  } catch (error) {
    deps.logger.warn({ err: error }, 'the next ordered webhook delivery was not started; the sweep will');
  }
}

export interface AttemptOptions {
  /** Per-attempt timeout (WEBHOOK_ATTEMPT_TIMEOUT). */
  timeoutMs?: number;
  /** The schedule's last attempt: a failure marks the delivery failed in the statement that records it. */
  lastAttempt?: boolean;
  /** How long to wait for a free slot before answering `deferred` (default 2 s). */
  slotWaitMs?: number;
}

/** Why no further attempt follows although this one did not succeed. */
export type StopReason = 'endpoint disabled' | 'endpoint deleted' | 'delivery failed' | 'delivery not found';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  /** From the receiver's Retry-After header (seconds or an HTTP date), when it sent one. */
  retryAfterMs?: number;
  /** Set when no further attempt may follow (the delivery is, or already was, settled). */
  stop?: StopReason;
  /** True when the outcome was read from an attempt recorded earlier rather than sent now. */
  replayed: boolean;
  /**
   * No slot came free in time (the endpoint or organisation has its bound of attempts in flight),
   * or the schedule's last attempt found the endpoint's circuit open: nothing was sent or recorded,
   * and the same attempt is to be made later.
   */
  deferred?: true;
  /** For a last attempt put off by an open circuit: how long the circuit stays open from now. */
  circuitOpenForMs?: number;
}

/** Error of an attempt not sent because the endpoint's circuit is open. */
export const CIRCUIT_OPEN_ERROR = 'not sent: circuit open after consecutive failures of this endpoint';

type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface LoadedDelivery {
  id: string;
  organisationId: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attemptCount: number;
  event: { id: string; type: string; payload: unknown; version: string; sequence: number | null; createdAt: Date };
  /** For an endpoint that orders per object: the object whose later deliveries wait for this one; else null. */
  orderingKey: string | null;
  endpoint: {
    url: string;
    signatureScheme: SignatureScheme;
    enabled: boolean;
    deletedAt: Date | null;
    apiVersion: string;
    secretCiphertext: string;
    previousSecretCiphertext: string | null;
    previousSecretExpiresAt: Date | null;
  };
  /** The attempt looked for (a scheduled attempt number, or manual attempt ids) as recorded already, if it was. */
  recorded?: { id: string; statusCode: number | null; error: string | null };
}

/** A delivery as loadDeliveries' statement answers it: LoadedDelivery's parts in one flat row. */
type DeliveryRow = Omit<LoadedDelivery, 'event' | 'endpoint' | 'recorded'> &
  LoadedDelivery['endpoint'] &
  Pick<LoadedDelivery['event'], 'payload' | 'version' | 'sequence'> & {
    eventCreatedAt: Date;
    recordedId: string | null;
    recordedStatusCode: number | null;
    recordedError: string | null;
  };

/** Which deliveries to load, and which of their attempts to look for among those recorded. */
export type DeliverySelection = (
  | { ids: readonly string[] }
  | { batchId: string }
  /** The deliveries a claiming statement (UPDATE ... RETURNING d.id) claims, claimed and loaded in one statement. */
  | { claim: Prisma.Sql }
) &
  ({ scheduledAttempt: number } | { attemptIds: readonly string[] });

/*
 * The hot path reads in one statement for a whole batch and records in one statement per attempt
 * (raw SQL through Prisma) rather than the round trips the model API makes here (a select per
 * include; BEGIN, insert, update, COMMIT): bench/webhooks.ts.
 */
export async function loadDeliveries(db: Database, selection: DeliverySelection): Promise<LoadedDelivery[]> {
  // A claim's rows are read as they were before it (one snapshot): only their ids come from it.
  const claim = 'claim' in selection ? Prisma.sql`WITH claimed AS (${selection.claim})` : Prisma.empty;
  const where =
    'batchId' in selection
      ? Prisma.sql`d."batchId" = ${selection.batchId}`
      : 'claim' in selection
        ? Prisma.sql`d.id IN (SELECT claimed.id FROM claimed)`
        : Prisma.sql`d.id = ANY(${[...selection.ids]}::text[])`;
  const attempt =
    'scheduledAttempt' in selection
      ? Prisma.sql`a."scheduledAttempt" = ${selection.scheduledAttempt}::int`
      : Prisma.sql`a.id = ANY(${[...selection.attemptIds]}::text[])`;
  const rows = await systemRows<DeliveryRow>(
    db,
    Prisma.sql`
    ${claim}
    SELECT d.id, d."organisationId", d."accountId", d."endpointId", d."eventId", e.type AS "eventType",
           d.status::text AS status, d."attemptCount",
           e.payload, e.version, e.sequence, d."orderingKey", e."createdAt" AS "eventCreatedAt",
           p.url, p."signatureScheme", p.enabled, p."deletedAt", p."apiVersion", p."secretCiphertext",
           p."previousSecretCiphertext", p."previousSecretExpiresAt",
           a.id AS "recordedId", a."statusCode" AS "recordedStatusCode", a.error AS "recordedError"
      FROM webhook_deliveries d
      JOIN webhook_events e ON e."organisationId" = d."organisationId" AND e.id = d."eventId"
      JOIN webhook_endpoints p ON p."organisationId" = d."organisationId" AND p.id = d."endpointId"
      LEFT JOIN webhook_attempts a ON a."deliveryId" = d.id AND ${attempt}
     WHERE ${where}
     ORDER BY d."createdAt", d.id`,
  );
  return rows.map((row) => ({
    id: row.id,
    organisationId: row.organisationId,
    accountId: row.accountId,
    endpointId: row.endpointId,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attemptCount: row.attemptCount,
    event: {
      id: row.eventId,
      type: row.eventType,
      payload: row.payload,
      version: row.version,
      sequence: row.sequence,
      createdAt: row.eventCreatedAt,
    },
    orderingKey: row.orderingKey,
    endpoint: {
      url: row.url,
      signatureScheme: row.signatureScheme,
      enabled: row.enabled,
      deletedAt: row.deletedAt,
      apiVersion: row.apiVersion,
      secretCiphertext: row.secretCiphertext,
      previousSecretCiphertext: row.previousSecretCiphertext,
      previousSecretExpiresAt: row.previousSecretExpiresAt,
    },
    ...(row.recordedId ? { recorded: { id: row.recordedId, statusCode: row.recordedStatusCode, error: row.recordedError } } : {}),
  }));
}

/** What one attempt is: which attempt of the delivery, and how its failure counts. */
export interface AttemptSpec {
  /** The attempt row's id (fixed in advance for manual attempts, so their record is idempotent). */
  attemptId: string;
  /** The place in the retry schedule; null for a manual attempt. */
  scheduledAttempt: number | null;
  /** The slot it holds, given back by its record. */
  leaseId: string;
  /** The schedule's last attempt (a failure settles the delivery as failed). */
  lastAttempt: boolean;
}

export function scheduledSpec(deliveryId: string, n: number, lastAttempt: boolean): AttemptSpec {
  return { attemptId: newId('webhookAttempt'), scheduledAttempt: n, leaseId: leaseId(deliveryId, n), lastAttempt };
}

/** The outcome of a delivery settled already, or of the attempt found recorded; undefined when it is still to be made. */
export function settledOutcome(delivery: LoadedDelivery): AttemptResult | undefined {
  // Idempotence under activity retries: the attempt recorded already (by an execution whose
  // completion was lost, e.g. its worker died) is answered from the record, not sent again.
  if (delivery.recorded) return replay(delivery.status, delivery.recorded);
  if (delivery.status === 'succeeded') return { ok: true, statusCode: null, error: null, replayed: true };
  if (delivery.status === 'failed') return { ok: false, statusCode: null, error: null, stop: 'delivery failed', replayed: true };
  return undefined;
}

/**
 * Checked before every attempt: disabling or deleting an endpoint stops its pending deliveries.
 * Re-enabling the endpoint does not revive them.
 */
export function stopReason(delivery: LoadedDelivery): 'endpoint disabled' | 'endpoint deleted' | undefined {
  if (delivery.endpoint.deletedAt) return 'endpoint deleted';
  return delivery.endpoint.enabled ? undefined : 'endpoint disabled';
}

/**
 * Attempt `n` of the retry schedule of one delivery (the retry workflow's local activity). An
 * endpoint disabled or deleted since the delivery was recorded is not sent to: the attempt is
 * recorded without a request (no status code, duration 0, error 'endpoint disabled' / 'endpoint
 * deleted') and the delivery marked failed, which stops the workflow. No free slot within
 * `slotWaitMs` answers `deferred`. An open circuit records the attempt as not sent, but for the
 * schedule's last attempt: that one answers `deferred` with how long the circuit stays open, and is
 * made once it lets attempts through, so the partner always gets its final try.
 */
export async function attemptDelivery(
  deps: DeliverDependencies,
  deliveryId: string,
  attemptNumber: number,
  options: AttemptOptions = {},
): Promise<AttemptResult> {
  const [delivery] = await loadDeliveries(deps.db, { ids: [deliveryId], scheduledAttempt: attemptNumber });
  if (!delivery) return { ok: false, statusCode: null, error: 'delivery not found', stop: 'delivery not found', replayed: false };
  const settled = settledOutcome(delivery);
  if (settled) return settled;
  const spec = scheduledSpec(delivery.id, attemptNumber, options.lastAttempt ?? false);
  const stop = stopReason(delivery);
  if (stop) return recordAttempt(deps, delivery, spec, stopped(stop));
  const patienceMs = options.slotWaitMs ?? 2_000;
  const slot = await waitForSlots(
    deps.db,
    deps.config,
    [{ leaseId: spec.leaseId, deliveryId: delivery.id, endpointId: delivery.endpointId, organisationId: delivery.organisationId }],
    {
      patienceMs,
      maxMs: patienceMs,
    },
  );
  const outcome = slot.get(spec.leaseId) ?? 'busy';
  if (outcome === 'busy') return { ok: false, statusCode: null, error: null, replayed: false, deferred: true };
  if (outcome === 'open' && spec.lastAttempt) {
    const circuitOpenForMs = await circuitOpenFor(deps.db, delivery.endpointId);
    return { ok: false, statusCode: null, error: null, replayed: false, deferred: true, circuitOpenForMs };
  }
  if (outcome === 'open') return recordAttempt(deps, delivery, spec, CIRCUIT_OPEN);
  return recordAttempt(deps, delivery, spec, await makeAttempt(deps, delivery, new SecretCache(deps.encryptionKey), options.timeoutMs));
}

/** How long the endpoint's circuit stays open from now, by the database's clock (0 once it is not). */
export async function circuitOpenFor(db: Database, endpointId: string): Promise<number> {
  const [row] = await db.$queryRaw<Array<{ ms: number | null }>>`
    SELECT (extract(epoch FROM "circuitOpenUntil" - clock_timestamp()) * 1000)::float8 AS ms
      FROM webhook_endpoints WHERE id = ${endpointId}`;
  return Math.max(0, Math.ceil(row?.ms ?? 0));
}

interface Prepared {
  body: string;
  headers: Record<string, string>;
}

/**
 * Decrypted signing secrets of the endpoints of one batch: each endpoint's decrypted once. During a
 * rotation's overlap (previousSecretExpiresAt in the future) both the new and the previous secret sign.
 */
export class SecretCache {
  readonly #byCiphertext = new Map<string, string>();
  constructor(readonly key: Buffer) {}

  secretsOf(endpoint: LoadedDelivery['endpoint'], now = Date.now()): string[] {
    const secrets = [this.#decrypt(endpoint.secretCiphertext)];
    if (endpoint.previousSecretCiphertext && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt.getTime() > now) {
      secrets.push(this.#decrypt(endpoint.previousSecretCiphertext));
    }
    return secrets;
  }

  #decrypt(ciphertext: string): string {
    let secret = this.#byCiphertext.get(ciphertext);
    if (secret === undefined) {
      secret = decryptSecret(ciphertext, this.key);
      this.#byCiphertext.set(ciphertext, secret);
    }
    return secret;
  }
}

/** Builds, signs and sends one attempt (the slot is held); never throws for what the receiver or its URL did. */
export async function makeAttempt(
  deps: Pick<DeliverDependencies, 'config'>,
  delivery: LoadedDelivery,
  secrets: SecretCache,
  timeoutMs = deps.config.WEBHOOK_ATTEMPT_TIMEOUT,
): Promise<Outcome> {
  const prepared = prepareRequest(delivery, secrets);
  if ('error' in prepared) return { ok: false, statusCode: null, responseBody: null, durationMs: 0, error: prepared.error, effect: 'none' };
  try {
    await assertDeliverableUrl(delivery.endpoint.url, { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS });
  } catch (error) {
    return { ok: false, statusCode: null, responseBody: null, durationMs: 0, error: `url refused: ${message(error)}`, effect: 'sent' };
  }
  // The at-least-once window (see the top of this file) is from here to the insert's commit.
  const attributes = { 'webhook.delivery_id': delivery.id, 'webhook.endpoint_id': delivery.endpointId, 'http.request.method': 'POST' };
  return tracer.startActiveSpan('webhook attempt', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    // The receiver can continue the trace (W3C traceparent) when tracing is on; nothing is added when
    // it is off. Only the trace context: our baggage (the request id) is not the receiver's business.
    const headers = { ...prepared.headers };
    TRACE_CONTEXT.inject(context.active(), headers, defaultTextMapSetter);
    try {
      const outcome = await send(delivery.endpoint.url, { ...prepared, headers }, timeoutMs, deps.config.WEBHOOK_ALLOW_PRIVATE_URLS);
      if (outcome.statusCode !== null) span.setAttribute('http.response.status_code', outcome.statusCode);
      if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error ?? `status ${outcome.statusCode}` });
      return outcome;
    } finally {
      span.end();
    }
  });
}

function prepareRequest(delivery: LoadedDelivery, secrets: SecretCache): Prepared | { error: string } {
  const { event, endpoint } = delivery;
  if (!isWebhookEventType(event.type)) return { error: `unknown event type ${event.type}` };
  let body: string;
  try {
    // Serialised once: these exact bytes are signed and sent.
    body = JSON.stringify(
      envelope({
        deliveryId: delivery.id,
        type: event.type,
        createdAt: event.createdAt,
        payload: event.payload as Payload,
        payloadVersion: event.version,
        sequence: event.sequence,
        endpointVersion: endpoint.apiVersion,
      }),
    );
  } catch (error) {
    return { error: `payload could not be built: ${message(error)}` };
  }
  let signWith: string[];
  try {
    signWith = secrets.secretsOf(endpoint);
  } catch {
    // A wrong SECRETS_ENCRYPTION_KEY in this process: recorded on the attempt, not retried forever.
    return { error: 'signing secret could not be decrypted (SECRETS_ENCRYPTION_KEY differs from the one that stored it)' };
  }
  // One timestamp for both schemes: the receiver's clock check means the same whichever it verifies.
  const timestamp = Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'Service-Signature': signatureHeader(signWith, body, timestamp),
    'Service-Event-Type': event.type,
    'Service-Event-Id': event.id,
    'Service-Delivery-Id': delivery.id,
  };
  if (endpoint.signatureScheme === 'standard') {
    // webhook-id is the source event (the same for every attempt and endpoint): what Standard
    // Webhooks receivers deduplicate on, as Service-Event-Id is here.
    headers['webhook-id'] = event.id;
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = standardSignatureHeader(
      // A previous secret issued before this scheme existed (rotated away to switch) cannot verify here.
      signWith.filter((secret, place) => place === 0 || isStandardSecret(secret)),
      event.id,
      timestamp,
      body,
    );
  }
  return { body, headers };
}

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
  retryAfterMs?: number;
  stop?: StopReason;
  /**
   * What the attempt says about the receiver: 'sent' (a request was made, or its URL refused)
   * moves the breaker and the disabling clock; 'short-circuited' (circuit open) keeps the clock
   * running without counting another failure; 'none' (stopped, or our own failure) touches neither.
   */
  effect: 'sent' | 'short-circuited' | 'none';
}

export const CIRCUIT_OPEN: Outcome = {
  ok: false,
  statusCode: null,
  responseBody: null,
  durationMs: 0,
  error: CIRCUIT_OPEN_ERROR,
  effect: 'short-circuited',
};

/**
 * The stop is kept as an attempt without a request (no status code, duration 0), so that the
 * delivery's attempt list says why it failed.
 */
export function stopped(reason: 'endpoint disabled' | 'endpoint deleted'): Outcome {
  return { ok: false, statusCode: null, responseBody: null, durationMs: 0, error: reason, stop: reason, effect: 'none' };
}

/**
 * Connections are reused across attempts (keep-alive), and each new one resolves its host through
 * `deliverableLookup`, so the address connected to is the address the URL policy checked (no DNS
 * rebinding between the check and the connection).
 */
const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

interface Received {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function send(url: string, request: Prepared, timeoutMs: number, allowPrivate: boolean): Promise<Outcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const signal = AbortSignal.timeout(timeoutMs);
  let received: Received;
  try {
    received = await post(new URL(url), request, signal, allowPrivate);
  } catch (error) {
    return { ok: false, statusCode: null, responseBody: null, durationMs: elapsed(), error: describeError(error, signal), effect: 'sent' };
  }
  const durationMs = elapsed();
  const { statusCode, headers, body } = received;
  const ok = statusCode >= 200 && statusCode < 300;
  const retryAfterMs = ok ? undefined : parseRetryAfter(first(headers['retry-after']));
  let error: string | null = null;
  if (statusCode >= 300 && statusCode < 400) {
    const location = first(headers.location);
    error = `redirect not followed${location ? ` (Location: ${location.slice(0, 200)})` : ''}`;
  }
  return { ok, statusCode, responseBody: body, durationMs, error, effect: 'sent', ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/**
 * One POST, redirects not followed (node:http never follows them). The status decides the outcome;
 * of the body, the first RESPONSE_BODY_LIMIT bytes are kept — a body still arriving when the
 * timeout fires is kept as far as it got.
 */
function post(url: URL, request: Prepared, signal: AbortSignal, allowPrivate: boolean): Promise<Received> {
  const protocol = url.protocol === 'https:' ? 'https:' : 'http:';
  const transport = protocol === 'https:' ? https : http;
  const body = Buffer.from(request.body, 'utf8');
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: 'POST',
        agent: agents[protocol],
        headers: { ...request.headers, 'Content-Length': String(body.byteLength) },
        lookup: deliverableLookup(allowPrivate),
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let settled = false;
        const finish = () => {
          if (settled) return;
          settled = true;
          const bytes = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT);
          // PostgreSQL text cannot hold NUL characters.
          const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes).replaceAll('\u0000', '');
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text });
        };
        res.on('data', (chunk: Buffer) => {
          if (size >= RESPONSE_BODY_LIMIT) return;
          chunks.push(chunk);
          size += chunk.byteLength;
          if (size >= RESPONSE_BODY_LIMIT) {
            finish();
            // The rest is not wanted: the connection is dropped rather than drained.
            res.destroy();
          }
        });
        res.on('end', finish);
        res.on('error', finish);
        res.on('close', finish);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function first(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

function describeError(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timeout';
  if (error instanceof UrlPolicyError) return `url refused: ${error.message}`;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return `connection failed: ${code}`;
  return `request failed: ${message(error)}`;
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent, unparseable or not in the future. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return ms > 0 ? ms : undefined;
  }
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  const ms = at - now;
  return ms > 0 ? ms : undefined;
}

/**
 * Records one attempt (src/webhooks/recorder.ts writes it with the others answered meanwhile, in
 * one statement: the attempt at the next position of its delivery, the delivery settled when this
 * attempt decides it — a success always; the last scheduled attempt, or a stop, as failed; a failed
 * manual attempt leaves it as it was — its slot given back, and the endpoint's circuit breaker and
 * automatic disabling moved). When the attempt exists already — another execution of this activity,
 * one Temporal had given up on, got there first — that record is the attempt's outcome.
 */
export async function recordAttempt(
  deps: DeliverDependencies,
  delivery: LoadedDelivery,
  spec: AttemptSpec,
  outcome: Outcome,
): Promise<AttemptResult> {
  const scheduled = spec.scheduledAttempt !== null;
  const settle = outcome.ok ? 'succeeded' : scheduled && (outcome.stop || spec.lastAttempt) ? 'failed' : null;
  let recorded: Awaited<ReturnType<ReturnType<typeof recorderFor>['record']>>;
  try {
    recorded = await recorderFor(deps.db, deps.config).record({
      attemptId: spec.attemptId,
      deliveryId: delivery.id,
      organisationId: delivery.organisationId,
      endpointId: delivery.endpointId,
      scheduledAttempt: spec.scheduledAttempt,
      attemptedAt: new Date(Date.now() - outcome.durationMs),
      statusCode: outcome.statusCode,
      responseBody: outcome.responseBody,
      durationMs: outcome.durationMs,
      error: outcome.error,
      ok: outcome.ok,
      settle,
      leaseId: spec.leaseId,
      effect: outcome.effect,
    });
  } finally {
    // Whether or not the record went through, the attempt is over for the waiting line.
    attemptFinished(spec.leaseId, delivery.endpointId, outcome.effect === 'sent' ? outcome.durationMs : null);
    slotReleased();
  }
  if (!recorded.inserted) {
    deps.logger.warn(
      { deliveryId: delivery.id, attemptId: spec.attemptId, scheduledAttempt: spec.scheduledAttempt },
      'webhook attempt already recorded by another execution',
    );
    const selection = scheduled ? { scheduledAttempt: spec.scheduledAttempt! } : { attemptIds: [spec.attemptId] };
    const [again] = await loadDeliveries(deps.db, { ids: [delivery.id], ...selection });
    if (!again?.recorded) throw new Error(`attempt ${spec.attemptId} of ${delivery.id} neither recorded nor recordable`);
    return replay(again.status, again.recorded);
  }
  const attemptOutcome = outcome.effect !== 'sent' ? 'not_sent' : outcome.ok ? 'succeeded' : 'failed';
  webhookAttempts.inc({ outcome: attemptOutcome, trigger: scheduled ? 'scheduled' : 'manual' });
  if (outcome.effect === 'sent') webhookAttemptDuration.observe({ outcome: attemptOutcome }, outcome.durationMs / 1000);
  if (settle) webhookDeliveries.inc({ outcome: settle });
  if (settle && delivery.orderingKey !== null) await releaseNext(deps, delivery);
  if (recorded.disabled) {
    deps.logger.warn(
      { endpointId: delivery.endpointId, organisationId: delivery.organisationId, accountId: delivery.accountId, ...recorded.disabled },
      'webhook endpoint disabled automatically: every attempt failed for WEBHOOK_DISABLE_AFTER',
    );
  }
  return {
    ok: outcome.ok,
    statusCode: outcome.statusCode,
    error: outcome.error,
    ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
    ...(outcome.stop ? { stop: outcome.stop } : settle === 'failed' ? { stop: 'delivery failed' as const } : {}),
    replayed: false,
  };
}

/** The outcome of an attempt recorded earlier. Retry-After is not stored, so a replay has none. */
function replay(status: DeliveryStatus, row: { statusCode: number | null; error: string | null }): AttemptResult {
  const ok = row.statusCode !== null && row.statusCode >= 200 && row.statusCode < 300;
  const result: AttemptResult = { ok, statusCode: row.statusCode, error: row.error, replayed: true };
  if (!ok && status !== 'pending') {
    result.stop = row.error === 'endpoint disabled' || row.error === 'endpoint deleted' ? row.error : 'delivery failed';
  }
  return result;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
