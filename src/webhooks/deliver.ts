import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { isWebhookEventType } from './event-types.ts';
import { envelope, type Payload } from './payloads.ts';
import { decryptSecret, signatureHeader } from './secrets.ts';
import { assertDeliverableUrl, deliverableLookup, UrlPolicyError } from './url-policy.ts';

/**
 * One HTTP attempt of a webhook delivery (../shared/spec/service-spec.md §6, ../shared/spec/contract.md "Webhook delivery"), run by
 * the delivery workflow's activity. Outside any request, so it uses the runtime database handle,
 * not a tenant-scoped one; the event and endpoint are joined on the delivery's organisation (as
 * the composite foreign keys are), so they can only be the delivery's own organisation's.
 *
 * A failed HTTP exchange (status outside 2xx, redirect not followed, timeout, refused connection,
 * refused URL) is a returned result, never a thrown error: only infrastructure failures (the
 * database) throw, and Temporal retries those.
 *
 * Idempotent per (delivery, attempt number): the attempt row is unique, and an attempt found
 * recorded is answered from its record, not sent again. What remains is the window between the
 * receiver's answer and the insert: a worker that dies there has sent attempt n without recording
 * it, and attempt n is sent once more (same Service-Event-Id and Service-Delivery-Id, a fresh
 * signature timestamp). Receivers deduplicate on Service-Event-Id (../shared/spec/service-spec.md §6).
 */

export const USER_AGENT = 'Service-Webhooks/1.0';
/** What is kept of a receiver's answer (../shared/spec/contract.md: first 4 KiB). */
export const RESPONSE_BODY_LIMIT = 4096;

export interface DeliverDependencies {
  db: Database;
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'WEBHOOK_ATTEMPT_TIMEOUT'>;
  encryptionKey: Buffer;
  logger: Logger;
}

export interface AttemptOptions {
  /** Per-attempt timeout (WEBHOOK_ATTEMPT_TIMEOUT). */
  timeoutMs?: number;
  /** The schedule's last attempt: a failure marks the delivery failed in the statement that records it. */
  lastAttempt?: boolean;
  trigger?: 'scheduled' | 'manual';
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
}

/**
 * Attempt `attemptNumber` of a delivery. An endpoint disabled or deleted since the delivery was
 * recorded is not sent to: the attempt is recorded without a request (no status code, duration 0,
 * error 'endpoint disabled' / 'endpoint deleted') and the delivery marked failed, which stops the
 * workflow. Re-enabling the endpoint does not revive it.
 */
export async function attemptDelivery(
  deps: DeliverDependencies,
  deliveryId: string,
  attemptNumber: number,
  options: AttemptOptions = {},
): Promise<AttemptResult> {
  const delivery = await loadDelivery(deps.db, deliveryId, attemptNumber);
  if (!delivery) return { ok: false, statusCode: null, error: 'delivery not found', stop: 'delivery not found', replayed: false };

  // Idempotence under activity retries: attempt n recorded already (by an execution of this
  // activity whose completion was lost, e.g. its worker died) is answered from the record, not sent again.
  if (delivery.recorded) return replay(delivery.status, delivery.recorded);
  if (delivery.status === 'succeeded') return { ok: true, statusCode: null, error: null, replayed: true };
  if (delivery.status === 'failed') return { ok: false, statusCode: null, error: null, stop: 'delivery failed', replayed: true };

  const { endpoint, event } = delivery;
  const attemptedAt = new Date();
  const record = (outcome: Outcome) => recordAttempt(deps, delivery, attemptNumber, attemptedAt, outcome, options);

  // Checked before every attempt: disabling or deleting an endpoint stops its pending deliveries.
  // The stop is kept as an attempt without a request (no status code, duration 0) so that the
  // delivery's attempt list says why it failed.
  const stop: StopReason | undefined = endpoint.deletedAt ? 'endpoint deleted' : endpoint.enabled ? undefined : 'endpoint disabled';
  if (stop) return record({ ok: false, statusCode: null, responseBody: null, durationMs: 0, error: stop, stop });

  const prepared = prepareRequest(deps, delivery.id, event, endpoint);
  if ('error' in prepared) return record({ ok: false, statusCode: null, responseBody: null, durationMs: 0, error: prepared.error });

  try {
    await assertDeliverableUrl(endpoint.url, { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS });
  } catch (error) {
    return record({ ok: false, statusCode: null, responseBody: null, durationMs: 0, error: `url refused: ${message(error)}` });
  }

  const timeoutMs = options.timeoutMs ?? deps.config.WEBHOOK_ATTEMPT_TIMEOUT;
  const outcome = await send(endpoint.url, prepared, timeoutMs, deps.config.WEBHOOK_ALLOW_PRIVATE_URLS);
  // The at-least-once window (see the top of this file) is from here to the insert's commit.
  return record(outcome);
}

interface Prepared {
  body: string;
  headers: Record<string, string>;
}

type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

interface LoadedDelivery {
  id: string;
  organisationId: string;
  status: DeliveryStatus;
  event: { id: string; type: string; payload: unknown; version: string; createdAt: Date };
  endpoint: { url: string; enabled: boolean; deletedAt: Date | null; apiVersion: string; secretCiphertext: string };
  /** Attempt n as recorded already, if it was. */
  recorded?: { statusCode: number | null; error: string | null };
}

/*
 * The hot path reads and writes in one statement each (raw SQL through Prisma) rather than the
 * eight round trips the model API makes here (four selects for the includes; BEGIN, insert,
 * update, COMMIT): bench/webhooks.ts. Event and endpoint are joined on the delivery's
 * organisation, like the composite foreign keys.
 */
async function loadDelivery(db: Database, deliveryId: string, attemptNumber: number): Promise<LoadedDelivery | undefined> {
  const [row] = await db.$queryRaw<
    Array<{
      id: string;
      organisationId: string;
      status: DeliveryStatus;
      eventId: string;
      eventType: string;
      payload: unknown;
      version: string;
      eventCreatedAt: Date;
      url: string;
      enabled: boolean;
      deletedAt: Date | null;
      apiVersion: string;
      secretCiphertext: string;
      recordedId: string | null;
      recordedStatusCode: number | null;
      recordedError: string | null;
    }>
  >`
    SELECT d.id, d."organisationId", d.status::text AS status,
           e.id AS "eventId", e.type AS "eventType", e.payload, e.version, e."createdAt" AS "eventCreatedAt",
           p.url, p.enabled, p."deletedAt", p."apiVersion", p."secretCiphertext",
           a.id AS "recordedId", a."statusCode" AS "recordedStatusCode", a.error AS "recordedError"
      FROM webhook_deliveries d
      JOIN webhook_events e ON e."organisationId" = d."organisationId" AND e.id = d."eventId"
      JOIN webhook_endpoints p ON p."organisationId" = d."organisationId" AND p.id = d."endpointId"
      LEFT JOIN webhook_attempts a ON a."deliveryId" = d.id AND a."attemptNumber" = ${attemptNumber}
     WHERE d.id = ${deliveryId}`;
  if (!row) return undefined;
  return {
    id: row.id,
    organisationId: row.organisationId,
    status: row.status,
    event: { id: row.eventId, type: row.eventType, payload: row.payload, version: row.version, createdAt: row.eventCreatedAt },
    endpoint: {
      url: row.url,
      enabled: row.enabled,
      deletedAt: row.deletedAt,
      apiVersion: row.apiVersion,
      secretCiphertext: row.secretCiphertext,
    },
    ...(row.recordedId ? { recorded: { statusCode: row.recordedStatusCode, error: row.recordedError } } : {}),
  };
}

function prepareRequest(
  deps: DeliverDependencies,
  deliveryId: string,
  event: { id: string; type: string; payload: unknown; version: string; createdAt: Date },
  endpoint: { apiVersion: string; secretCiphertext: string },
): Prepared | { error: string } {
  if (!isWebhookEventType(event.type)) return { error: `unknown event type ${event.type}` };
  let body: string;
  try {
    // Serialised once: these exact bytes are signed and sent.
    body = JSON.stringify(
      envelope({
        deliveryId,
        type: event.type,
        createdAt: event.createdAt,
        payload: event.payload as Payload,
        payloadVersion: event.version,
        endpointVersion: endpoint.apiVersion,
      }),
    );
  } catch (error) {
    return { error: `payload could not be built: ${message(error)}` };
  }
  let secret: string;
  try {
    secret = decryptSecret(endpoint.secretCiphertext, deps.encryptionKey);
  } catch {
    // A wrong SECRETS_ENCRYPTION_KEY in this process: recorded on the attempt, not retried forever.
    return { error: 'signing secret could not be decrypted (SECRETS_ENCRYPTION_KEY differs from the one that stored it)' };
  }
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
      'Service-Signature': signatureHeader(secret, body),
      'Service-Event-Type': event.type,
      'Service-Event-Id': event.id,
      'Service-Delivery-Id': deliveryId,
    },
  };
}

interface Outcome {
  ok: boolean;
  statusCode: number | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
  retryAfterMs?: number;
  stop?: StopReason;
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
    return { ok: false, statusCode: null, responseBody: null, durationMs: elapsed(), error: describeError(error, signal) };
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
  return { ok, statusCode, responseBody: body, durationMs, error, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
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
 * Inserts attempt n and bumps the delivery's attemptCount (settling it when this attempt decides
 * it) in one statement, so both or neither happen. Answers the recorded outcome: when attempt n
 * exists already — another execution of this activity, one Temporal had given up on, got there
 * first — that record is the attempt's outcome.
 */
async function recordAttempt(
  deps: DeliverDependencies,
  delivery: Pick<LoadedDelivery, 'id' | 'organisationId'>,
  attemptNumber: number,
  attemptedAt: Date,
  outcome: Outcome,
  options: AttemptOptions,
): Promise<AttemptResult> {
  const { db } = deps;
  const settle: DeliveryStatus | null = outcome.ok ? 'succeeded' : outcome.stop || options.lastAttempt ? 'failed' : null;
  const now = new Date();
  const inserted = await db.$executeRaw`
    WITH attempt AS (
      INSERT INTO webhook_attempts
             (id, "organisationId", "deliveryId", "attemptNumber", trigger, "attemptedAt", "statusCode", "responseBody", "durationMs", error)
      VALUES (${newId('webhookAttempt')}, ${delivery.organisationId}, ${delivery.id}, ${attemptNumber},
              ${options.trigger ?? 'scheduled'}::attempt_trigger, ${attemptedAt}, ${outcome.statusCode}, ${outcome.responseBody},
              ${outcome.durationMs}, ${outcome.error})
      ON CONFLICT ("deliveryId", "attemptNumber") DO NOTHING
      RETURNING "deliveryId"
    )
    UPDATE webhook_deliveries
       SET "attemptCount" = "attemptCount" + 1,
           status = COALESCE(${settle}::delivery_status, status),
           "completedAt" = CASE WHEN ${settle}::text IS NULL THEN "completedAt" ELSE ${now} END,
           "nextAttemptAt" = CASE WHEN ${settle}::text IS NULL THEN "nextAttemptAt" ELSE NULL END,
           "updatedAt" = ${now}
     WHERE id = (SELECT "deliveryId" FROM attempt) AND "organisationId" = ${delivery.organisationId}`;
  if (inserted === 0) {
    deps.logger.warn({ deliveryId: delivery.id, attemptNumber }, 'webhook attempt already recorded by another execution');
    const again = await loadDelivery(db, delivery.id, attemptNumber);
    if (!again?.recorded) throw new Error(`attempt ${attemptNumber} of ${delivery.id} neither recorded nor recordable`);
    return replay(again.status, again.recorded);
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
function replay(
  status: DeliveryStatus,
  row: { statusCode: number | null; error: string | null },
): AttemptResult {
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
