import type { Request, Response } from 'express';
import { sha256 } from '../auth/keys.ts';
import type { RequestContext } from '../context.ts';
import type { Database } from '../db/client.ts';
import { AppError, errorBody, toAppError } from '../errors.ts';
import { clientBucket } from '../limits/rate-limiter.ts';

/**
 * Idempotency keys, as payment APIs have them (../shared/spec/contract.md, "Decided later"): a POST
 * of /v1 or /live with `Idempotency-Key` (1 to 255 printable characters) is answered once; the same
 * key from the same credential with the same request within 24 hours gets that first answer again
 * (status, body, and the headers it set) with `Idempotent-Replayed: true`, without the work being
 * done twice, whichever API process receives it. The same key with another request (method, path,
 * query or body) is 409 CONFLICT. Requests with one key that arrive together run once: the others
 * wait for the first answer (up to WAIT_MS, then 409 asking to retry).
 *
 * Kept in PostgreSQL (`idempotency_keys`), keyed by the credential (an API key, a user, a channel
 * key; without one, the client address) and scoped to its organisation. Answers that did nothing
 * (429 throttles, 5xx faults) are not kept, so a retry runs again. A claim whose process died is
 * taken over after CLAIM_MS. Rows older than a day are deleted by the worker.
 */

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const CLAIM_MS = 60_000;
const WAIT_MS = 10_000;
const POLL_MS = 50;
const KEY = /^[\x21-\x7e]{1,255}$/;
/** Headers an answer sets that belong to it and are repeated on replay. */
const REPLAYED_HEADERS = ['x-live-session', 'set-cookie', 'location', 'service-version'];

interface StoredAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string | string[]>;
}

interface Row {
  requestHash: string;
  state: string;
  responseStatus: number | null;
  responseBody: unknown;
  responseHeaders: Record<string, string | string[]> | null;
  expired: boolean;
}

function credentialOf(ctx: RequestContext): string {
  const p = ctx.principal;
  if (!p) return `address:${clientBucket(ctx.clientIp)}`;
  if (p.kind === 'staff') return `staff:${p.personId}`;
  if (p.kind === 'apiKey') return `key:${p.apiKeyId}`;
  if (p.kind === 'embed') return `embed:${p.sessionId}`;
  if (p.kind === 'channel') return `channel:${p.channelKeyId}${p.customerId ? `:${p.customerId}` : ''}`;
  return `customer:${p.customerId}`;
}

/** JSON with object keys in order, so two encodings of one body hash alike. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Answers `req` through its Idempotency-Key when it has one: runs `answer` once and stores what it
 * answered, or replays the stored answer. `answer` produces the success (status, body); an error
 * it throws is answered (and stored) in the contract's envelope.
 */
export async function idempotently(
  db: Database,
  ctx: RequestContext,
  req: Request,
  res: Response,
  answer: () => Promise<{ status: number; body: unknown }>,
): Promise<void> {
  const key = req.get('idempotency-key');
  if (key === undefined) return send(res, await answer());
  if (!KEY.test(key)) {
    throw AppError.validation([{ path: 'Idempotency-Key', message: '1 to 255 printable ASCII characters (no spaces)' }]);
  }
  const id = sha256(`${credentialOf(ctx)}\u0000${key}`);
  const requestHash = sha256(`${req.method} ${req.originalUrl}\u0000${canonical(req.body ?? null)}`);
  const organisationId = ctx.organisation?.id ?? null;

  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await claim(db, id, organisationId, requestHash)) break;
    const row = await read(db, id);
    if (!row) continue;
    if (row.requestHash !== requestHash) {
      throw new AppError('CONFLICT', 'This Idempotency-Key was used with another request; use a new key for a new request.');
    }
    if (row.state === 'done') {
      res.setHeader('Idempotent-Replayed', 'true');
      for (const [name, value] of Object.entries(row.responseHeaders ?? {})) res.setHeader(name, value);
      res.status(row.responseStatus!).json(row.responseBody);
      return;
    }
    if (Date.now() >= deadline) {
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being answered; retry shortly.', undefined, {
        'Retry-After': '1',
      });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }

  let stored: StoredAnswer;
  try {
    const { status, body } = await answer();
    stored = { status, body, headers: replayedHeaders(res) };
  } catch (error) {
    const appError = toAppError(error);
    if (appError.status === 429 || appError.status >= 500) {
      await release(db, id);
      throw error;
    }
    await store(db, id, {
      status: appError.status,
      body: errorBody(appError, ctx.requestId),
      headers: { ...appError.headers, ...replayedHeaders(res) },
    });
    throw error;
  }
  await store(db, id, stored);
  send(res, stored);
}

function send(res: Response, { status, body }: { status: number; body: unknown }): void {
  res.status(status).json(body);
}

function replayedHeaders(res: Response): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = typeof value === 'number' ? String(value) : value;
  }
  return headers;
}

/**
 * Takes the key for this request: a new row, or one whose claim lapsed (its process died) or that
 * expired (a day old) — in one statement, so of concurrent requests exactly one wins.
 */
async function claim(db: Database, id: string, organisationId: string | null, requestHash: string): Promise<boolean> {
  const rows = await db.$queryRaw<Array<{ id: string }>>`
    INSERT INTO idempotency_keys (id, "organisationId", "requestHash", state, "lockedUntil", "createdAt")
    VALUES (${id}, ${organisationId}, ${requestHash}, 'running', now() + ${`${CLAIM_MS} milliseconds`}::interval, now())
    ON CONFLICT (id) DO UPDATE SET
      "requestHash" = EXCLUDED."requestHash", state = 'running', "responseStatus" = NULL, "responseBody" = NULL,
      "responseHeaders" = NULL, "lockedUntil" = EXCLUDED."lockedUntil", "createdAt" = now()
    WHERE idempotency_keys."createdAt" < now() - ${`${IDEMPOTENCY_TTL_MS} milliseconds`}::interval
       OR (idempotency_keys.state = 'running' AND idempotency_keys."lockedUntil" < now()
           AND idempotency_keys."requestHash" = EXCLUDED."requestHash")
    RETURNING id`;
  return rows.length === 1;
}

async function read(db: Database, id: string): Promise<Row | undefined> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT "requestHash", state, "responseStatus", "responseBody", "responseHeaders",
           "createdAt" < now() - ${`${IDEMPOTENCY_TTL_MS} milliseconds`}::interval AS expired
      FROM idempotency_keys WHERE id = ${id}`;
  const row = rows[0];
  return row && !row.expired ? row : undefined;
}

async function store(db: Database, id: string, answer: StoredAnswer): Promise<void> {
  await db.$executeRaw`
    UPDATE idempotency_keys SET state = 'done', "responseStatus" = ${answer.status},
      "responseBody" = ${JSON.stringify(answer.body ?? null)}::jsonb, "responseHeaders" = ${JSON.stringify(answer.headers)}::jsonb
    WHERE id = ${id}`;
}

async function release(db: Database, id: string): Promise<void> {
  await db.$executeRaw`DELETE FROM idempotency_keys WHERE id = ${id} AND state = 'running'`;
}

/** Deletes keys older than a day (the worker runs this). */
export async function pruneIdempotencyKeys(db: Database): Promise<number> {
  return db.$executeRaw`DELETE FROM idempotency_keys WHERE "createdAt" < now() - ${`${IDEMPOTENCY_TTL_MS} milliseconds`}::interval`;
}
