import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import type { Database } from '../../src/db/client.ts';
import { newId } from '../../src/ids.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';
import type { WebhookEventType } from '../../src/webhooks/event-types.ts';
import { views, type Payload } from '../../src/webhooks/payloads.ts';
import { recordWebhookEvent, type RecordedWebhookEvent } from '../../src/webhooks/record.ts';
import { encryptSecret, newSigningSecret } from '../../src/webhooks/secrets.ts';

/**
 * A real HTTP webhook receiver on 127.0.0.1, as a customer would write one: it keeps each
 * request's raw body and headers, verifies the signature with Stripe's own verifier (the same
 * `t=...,v1=...` scheme, 5 minutes of tolerance) when it knows the secret, and answers as told:
 * fail the next N requests, fail always, sleep before answering, send Retry-After.
 */

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Date.now() when the body had arrived. */
  receivedAt: number;
  /** The status this receiver answered (0 while sleeping, or when the client went away first). */
  status: number;
  /** Answered, or abandoned by the client (a sender's timeout) before the answer. */
  settled: boolean;
  /** Date.now() when it was answered or abandoned. */
  settledAt?: number;
  /** Set when a secret is known: whether Stripe.webhooks.constructEvent accepted the delivery. */
  verified?: boolean;
  verificationError?: string;
}

export interface ReceiverBehaviour {
  /** Answer this status to the next N requests, then succeed. */
  failNext?: number;
  /** Answer every request with this status (overrides failNext). */
  failAlways?: boolean;
  failureStatus?: number;
  /** Wait this long before answering. */
  sleepMs?: number;
  /** Only the next N requests sleep (with sleepMs); unset = every request. */
  sleepNext?: number;
  /** Retry-After header value sent with failures. */
  retryAfter?: string;
  /** Status when verification fails (a real receiver would answer 400). */
  rejectUnverified?: boolean;
}

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  behaviour: ReceiverBehaviour;
  /** Behaviour of one path (an endpoint, see createTestEndpoint), instead of `behaviour`. */
  pathBehaviours: Map<string, ReceiverBehaviour>;
  /** Endpoint signing secrets by path, for verification. */
  secrets: Map<string, string>;
  /** Forgets every request received so far. */
  reset(): void;
  /** Resolves once `count` requests (optionally only those matching) are settled. */
  waitForRequests(count: number, filter?: (r: ReceivedRequest) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(behaviour: ReceiverBehaviour = {}): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const secrets = new Map<string, string>();
  const pathBehaviours = new Map<string, ReceiverBehaviour>();
  // Requests in the order they settled: each waiter reads on from where it stopped, so waiting
  // costs linear time however many requests arrive (the benchmark's thousands).
  const settledLog: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const settle = (entry: ReceivedRequest) => {
    entry.settled = true;
    entry.settledAt = Date.now();
    settledLog.push(entry);
    for (const waiter of waiters) waiter();
  };
  const state = { behaviour };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const entry: ReceivedRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        rawBody,
        receivedAt: Date.now(),
        status: 0,
        settled: false,
      };
      requests.push(entry);
      const secret = secrets.get(path);
      if (secret) {
        try {
          Stripe.webhooks.constructEvent(rawBody, String(req.headers['service-signature'] ?? ''), secret);
          entry.verified = true;
        } catch (error) {
          entry.verified = false;
          entry.verificationError = (error as Error).message;
        }
      }
      const b = pathBehaviours.get(path) ?? state.behaviour;
      let status = 200;
      if (b.rejectUnverified && entry.verified === false) status = 400;
      else if (b.failAlways) status = b.failureStatus ?? 500;
      else if (b.failNext && b.failNext > 0) {
        b.failNext -= 1;
        status = b.failureStatus ?? 500;
      }
      const answer = () => {
        if (res.destroyed) return;
        entry.status = status;
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (status >= 300 && b.retryAfter) headers['retry-after'] = b.retryAfter;
        res.writeHead(status, headers);
        res.end(JSON.stringify({ received: true, status }));
        settle(entry);
      };
      let sleep = b.sleepMs ?? 0;
      if (sleep && b.sleepNext !== undefined) {
        if (b.sleepNext > 0) b.sleepNext -= 1;
        else sleep = 0;
      }
      if (sleep) {
        const timer = setTimeout(answer, sleep);
        res.on('close', () => {
          if (!res.writableEnded) {
            clearTimeout(timer);
            settle(entry);
          }
        });
      } else answer();
    });
  });
  // Many deliveries in flight at once (the benchmark); keep-alive connections reused by the sender.
  server.keepAliveTimeout = 30_000;
  server.maxRequestsPerSocket = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get behaviour() {
      return state.behaviour;
    },
    set behaviour(value: ReceiverBehaviour) {
      state.behaviour = value;
    },
    secrets,
    pathBehaviours,
    reset() {
      requests.length = 0;
      settledLog.length = 0;
    },
    waitForRequests(count, filter = () => true, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const matching: ReceivedRequest[] = [];
        let read = 0;
        const check = () => {
          for (; read < settledLog.length; read += 1) if (filter(settledLog[read]!)) matching.push(settledLog[read]!);
          if (matching.length >= count) {
            done();
            resolve(matching);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${count} webhook requests; got ${matching.length}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An endpoint row made directly (the endpoint API is tested elsewhere), with its secret encrypted
 * the way the service stores it; its URL is `${receiverUrl}/hooks/<endpoint id>` so one receiver
 * can serve several endpoints and tell them apart.
 */
export async function createTestEndpoint(
  db: Database,
  encryptionKey: Buffer,
  args: { organisationId: string; accountId: string; receiver: WebhookReceiver; apiVersion?: string; eventTypes?: string[] },
): Promise<{ id: string; url: string; path: string; secret: string }> {
  const id = newId('webhookEndpoint');
  const path = `/hooks/${id}`;
  const secret = newSigningSecret();
  const url = `${args.receiver.url}${path}`;
  await db.webhookEndpoint.create({
    data: {
      id,
      organisationId: args.organisationId,
      accountId: args.accountId,
      url,
      eventTypes: args.eventTypes ?? [],
      apiVersion: args.apiVersion ?? CURRENT_VERSION,
      secretCiphertext: encryptSecret(secret, encryptionKey),
    },
  });
  args.receiver.secrets.set(path, secret);
  return { id, url, path, secret };
}

/** Records a source event the way services do: in a transaction, with its deliveries. */
export async function recordTestEvent(
  db: Database,
  event: { organisationId: string; accountId: string; type: WebhookEventType; payload: Payload },
): Promise<RecordedWebhookEvent> {
  return db.$transaction((tx) => recordWebhookEvent(tx, event));
}

/**
 * `count` event.created deliveries to the account's endpoints, recorded as services record them,
 * then marked failed as after their last retry: a backlog for resends and recoveries to work on.
 */
export async function recordFailedDeliveries(
  db: Database,
  target: { organisationId: string; accountId: string },
  count: number,
): Promise<string[]> {
  return db.$transaction(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const payload = views.event({
        id: newId('event'),
        name: 'Failed',
        status: 'draft',
        accountId: target.accountId,
        venueId: null,
        timezone: 'UTC',
        createdAt: new Date(),
      });
      const recorded = await recordWebhookEvent(tx, { ...target, type: 'event.created', payload });
      ids.push(...recorded.deliveryIds);
    }
    await tx.webhookDelivery.updateMany({ where: { id: { in: ids } }, data: { status: 'failed', completedAt: new Date() } });
    return ids;
  });
}

/** The most requests that were in flight at once (received, not yet answered) among those matching. */
export function maxConcurrent(requests: readonly ReceivedRequest[], filter: (r: ReceivedRequest) => boolean = () => true): number {
  const edges = requests
    .filter(filter)
    .flatMap((r) => [
      [r.receivedAt, 1],
      [r.settledAt ?? Number.POSITIVE_INFINITY, -1],
    ])
    // An answer at the same millisecond as an arrival frees its place first.
    .sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let current = 0;
  let most = 0;
  for (const [, change] of edges) most = Math.max(most, (current += change!));
  return most;
}
