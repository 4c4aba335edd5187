import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { sha256 } from '../auth/keys.ts';
import type { RequestContext } from '../context.ts';
import { asideOf, type Database } from '../db/client.ts';
import { systemRows } from '../db/sql.ts';
import { AppError, errorBody, FaultAfterWork, toAppError } from '../errors.ts';
import { clientBucket } from '../limits/rate-limiter.ts';
import { idempotencyKeys } from '../metrics.ts';
import { decryptSecret, encryptSecret } from '../webhooks/secrets.ts';

/**
 * Idempotency keys, as payment APIs have them (docs/security.md, "Idempotency and secrets"): a POST of /v1 or
 * /live (or a mutation on /graphql: src/graphql/keyed-mutations.ts) with `Idempotency-Key` (1 to 255
 * characters, no control characters) is answered once; the same key in the same namespace with the
 * same request within 24 hours gets that first answer again (status, body, and the headers it set)
 * with `Idempotent-Replayed: true`, without the work being done twice, whichever API process
 * receives it. The same key with another request (method, path, query or body) is 409
 * CONFLICT. Requests with one key that arrive together run once: the others wait for the first
 * answer (up to WAIT_MS, then 409 asking to retry).
 *
 * The namespace is everything that tells callers apart: the credential (an API key, a person, an
 * embed session, a channel key, a customer), the organisation and, for a storefront naming a sales
 * session, the session. The API version the request is answered in is part of the request: the
 * same key under another version is 409, never a replay in the other version. A storefront calling
 * with its public publishable key and no signed-in shopper has nothing of its own but a session
 * the service gave out: a call without one (a browser's first cart), or naming one that is not
 * this channel's live session, keeps no key.
 *
 * Secrets: an answer is stored encrypted with the secrets key. Routes whose answer carries a token
 * pair keep nothing (`never`): every request runs, so a refresh token presented twice is still
 * caught. Routes whose answer carries key material keep the answer without it, and a retry is 409
 * CONFLICT naming what was made and where to read it (test/platform/idempotency-attacks.test.ts).
 *
 * Bounded: keys stored per credential per day (and per client address for callers whose
 * credential is public); refusals of callers without a credential of their own are not kept; a
 * waiting request polls with growing pauses, or waits in memory when its own process holds the
 * claim, and only so many wait at once.
 *
 * Run once: the quota is counted whichever request takes a key. A claim is renewed while its
 * request runs, and an answer whose work is done is stored with retries; a claim that lapses all
 * the same (its process died) is never run again, since its work may have committed: a retry is
 * 409 CONFLICT saying so (test/platform/idempotency-attacks.test.ts).
 */

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a retry waits for the answer of a request with its key that is still running. */
const WAIT_MS = 10_000;
/** Pauses between reads of a claim held by another process: growing, so a waiter costs ~15 reads. */
const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1_000;
/**
 * Requests one process lets wait for claims at once, and for one claim: beyond them a retry is told
 * to come back (409 with Retry-After) instead of holding a connection and a timer.
 */
const MAX_WAITERS = 1_000;
const MAX_WAITERS_PER_KEY = 20;
/** Any string of 1 to 255 characters (docs/spec/contract.md), control characters aside. */
// eslint-disable-next-line no-control-regex -- the control characters are what it refuses
const KEY = /^[^\x00-\x1f\x7f-\x9f]{1,255}$/u;
/** Headers an answer sets that belong to it and are repeated on replay. */
const REPLAYED_HEADERS = ['x-live-session', 'set-cookie', 'location', 'service-version'];
/** The window of the per-credential and per-address quotas of stored keys. */
const QUOTA_WINDOW_MS = IDEMPOTENCY_TTL_MS;

/**
 * How a route's answer may be replayed. `replay`: as it was. `never`: the answer carries a token
 * pair, the key is not kept and every request runs. Otherwise the answer carries key material at
 * `secrets`: it is kept without them and a retry is 409 CONFLICT whose details hold what was made
 * and `readWith`, where to read it.
 */
export type AnswerReplay<Secrets = readonly string[] | ((body: unknown) => unknown)> =
  | 'replay'
  | 'never'
  | {
      /**
       * Where the secrets are: dotted paths in a success's body, or a function answering the body
       * without them (undefined when it held none: then it is replayed as it was).
       */
      secrets: Secrets;
      /** Where the thing made can be read (or revoked), from the answer. */
      readWith: (answer: unknown) => string;
    };

export interface IdempotencyOptions {
  replay: AnswerReplay;
  claimTimeoutMs: number;
  keysPerCredential: number;
  keysPerAddress: number;
}

export interface StoredAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string | string[]>;
}

interface Row {
  requestHash: string;
  state: string;
  responseStatus: number | null;
  answer: string | null;
  replayable: boolean;
  lapsed: boolean;
}

interface Caller {
  /** Whose quota a stored key counts against. */
  credential: string;
  /** Whose keys these are: the credential and, for a storefront, the shopper's sales session. */
  namespace: string;
  /** The credential is not the caller's alone (a publishable key, or none). */
  public: boolean;
  /** The sales session the key is kept for only while it is this channel's and alive. */
  liveSession?: { channelId: string; sessionId: string };
}

/**
 * Who is calling, as the namespace of their keys; null when the caller has nothing of its own. A
 * storefront's keys are per sales session whenever it names one: a server calling with its secret
 * key for many shoppers, or one signed-in shopper in two browsers, has a cart per session, and the
 * first session's answer (its cart, its session) is not another's.
 */
function callerOf(ctx: RequestContext): Caller | null {
  const p = ctx.principal;
  const own = (credential: string): Caller => ({ credential, namespace: credential, public: false });
  if (!p) {
    const credential = `address:${clientBucket(ctx.clientIp)}`;
    return { credential, namespace: credential, public: true };
  }
  if (p.kind === 'staff') return own(`staff:${p.personId}`);
  if (p.kind === 'apiKey') return own(`key:${p.apiKeyId}`);
  if (p.kind === 'embed') return own(`embed:${p.sessionId}`);
  if (p.kind === 'customer') return own(`customer:${p.customerId}`);
  const session = ctx.liveSessionId ? `:session:${ctx.liveSessionId}` : '';
  if (p.customerId) {
    const credential = `channel:${p.channelKeyId}:customer:${p.customerId}`;
    return { credential, namespace: credential + session, public: false };
  }
  if (p.keyKind === 'secret')
    return { credential: `channel:${p.channelKeyId}`, namespace: `channel:${p.channelKeyId}${session}`, public: false };
  // A publishable key lives in every browser of the storefront: only a sales session the service
  // gave out, to this channel and still alive, is the shopper's. Any other (made up, expired, or
  // another shop's cookie) is no session: the call's key is not kept (`claim` checks it).
  if (!ctx.liveSessionId) return null;
  const credential = `channel:${p.channelKeyId}${session}`;
  return { credential, namespace: credential, public: true, liveSession: { channelId: p.channelId, sessionId: ctx.liveSessionId } };
}

/** JSON with object keys in order, so two encodings of one body hash alike. */
export function canonical(value: unknown): string {
  // JSON.stringify writes Infinity as null; bare words JSON never writes keep them apart.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
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
 * The key of the Idempotency-Key headers a request sent (their values as HTTP hands them over, one
 * byte a character): exactly one header, read as UTF-8, so `注文-1` is five characters and not the
 * C1 bytes of its encoding (test/platform/idempotency-edges.test.ts).
 */
function judgedKey(sent: readonly string[]): string {
  const refused = (message: string) => AppError.validation([{ path: 'Idempotency-Key', message }]);
  // Two headers would be joined with ", " into a key nobody sent.
  if (sent.length !== 1) throw refused('one Idempotency-Key header, not several');
  const bytes = Buffer.from(sent[0]!, 'latin1');
  const key = bytes.toString('utf8');
  if (!Buffer.from(key, 'utf8').equals(bytes)) throw refused('UTF-8 text');
  if (!KEY.test(key)) throw refused('1 to 255 characters, none of them a control character');
  return key;
}

/** Requests of this process waiting for a claim, per claim: bounded by MAX_WAITERS(_PER_KEY). */
const waiting = new Map<string, number>();
let waitingTotal = 0;
/** Claims this process holds: a waiter here is woken when the answer is stored, without reading. */
const held = new Map<string, Promise<void>>();

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
  options: IdempotencyOptions,
  answer: () => Promise<{ status: number; body: unknown }>,
): Promise<void> {
  const key = req.headersDistinct['idempotency-key'];
  if (key === undefined) return send(res, await answer());
  const outcome = await onceForKey<{ failed: boolean; error?: unknown }>(
    db,
    ctx,
    key,
    `${req.method} ${req.originalUrl}\u0000${canonical(req.body ?? null)}`,
    options,
    async () => {
      try {
        const { status, body } = await answer();
        return { value: { failed: false }, answer: { status, body, headers: replayedHeaders(res) } };
      } catch (error) {
        const failure = toAppError(error);
        const answered = {
          status: failure.status,
          body: errorBody(failure, ctx.requestId),
          headers: { ...failure.headers, ...replayedHeaders(res) },
        };
        return { value: { failed: true, error }, answer: answered, failure };
      }
    },
  );
  if ('replayed' in outcome) {
    res.setHeader('Idempotent-Replayed', 'true');
    for (const [name, value] of Object.entries(outcome.replayed.headers)) res.setHeader(name, value);
    res.status(outcome.replayed.status).json(outcome.replayed.body);
    return;
  }
  if (outcome.ran.value.failed) throw outcome.ran.value.error;
  send(res, outcome.ran.answer);
}

/** What a request run under a key answered: `answer` is what is kept, unless `failure` says it did nothing. */
export interface KeyedRun<T> {
  value: T;
  answer: StoredAnswer;
  /** The refusal or fault the answer is, if it is one. */
  failure?: AppError;
}

/**
 * The transport's side of a key: `request` is everything that makes two requests the same one
 * (method, path, query, body), and `run` does the work once. Answers what `run` answered, or the
 * answer stored for the key (`replayed`); refusals of the key itself (another request, still
 * running, interrupted, a secret not shown again) are thrown as 409 CONFLICT. Shared by /v1, /live
 * and /graphql's mutations (src/graphql/keyed-mutations.ts).
 */
export async function onceForKey<T>(
  db: Database,
  ctx: RequestContext,
  sent: readonly string[],
  request: string,
  options: IdempotencyOptions,
  run: () => Promise<KeyedRun<T>>,
): Promise<{ ran: KeyedRun<T> } | { replayed: StoredAnswer }> {
  const key = judgedKey(sent);
  if (options.replay === 'never') return notKept(run);
  const caller = callerOf(ctx);
  if (!caller) return notKept(run);
  const organisationId = ctx.organisation?.id ?? null;
  const id = sha256([caller.namespace, organisationId ?? '-', key].join('\u0000'));
  // The API version is part of the request, not of the namespace: the same key under another
  // version (another Service-Version, or the organisation's pinned version changed between a
  // request and its retry) is refused, never answered in the other version nor run a second time.
  const requestHash = sha256(`${ctx.apiVersion}\u0000${request}`);
  const claimToken = randomBytes(16).toString('base64url');

  const deadline = Date.now() + WAIT_MS;
  const claimKey = (liveSession?: Caller['liveSession']) =>
    claim(db, { id, organisationId, requestHash, claimToken, claimMs: options.claimTimeoutMs, liveSession });
  const first = await claimKey(caller.liveSession);
  if (!first.live) return notKept(run);
  // A session judged live when its key was first claimed stays the key's while this request waits.
  const takeOver = async () => (await claimKey()).claimed;
  if (!first.claimed) {
    const stored = await waitForAnswer(db, ctx, id, requestHash, deadline, takeOver);
    if (stored) {
      idempotencyKeys.inc({ outcome: 'replayed' });
      return { replayed: stored };
    }
  }
  // Counted whichever way the key was taken: a twin of a request refused for the quota takes the
  // key it gave back, and is refused in its turn.
  await withinQuota(ctx, caller, options, () => release(db, id, claimToken));

  let settle = () => {};
  const settled = new Promise<void>((resolve) => (settle = resolve));
  held.set(id, settled);
  const renewClaim = () => void renew(db, id, claimToken, options.claimTimeoutMs).catch(() => undefined);
  const renewal = setInterval(renewClaim, options.claimTimeoutMs / 3);
  let releasing: Promise<void> | undefined;
  renewal.unref();
  try {
    let ran: KeyedRun<T>;
    try {
      ran = await run();
    } catch (error) {
      // The transport failed to answer at all: nothing to keep, so, as for a fault, the key is given back.
      releasing = (await givenBack(ctx, () => release(db, id, claimToken))).later;
      throw error;
    }
    const { failure } = ran;
    // Throttles and faults did nothing: a retry runs again. A caller without a credential of its
    // own leaves nothing behind by being refused. A fault after the work was done did something:
    // it is kept like an answer, and a retry is told so again.
    const didNothing = failure !== undefined && !(failure instanceof FaultAfterWork);
    if (didNothing && (failure.status === 429 || failure.status >= 500 || (caller.public && failure.status >= 400))) {
      releasing = (await givenBack(ctx, () => release(db, id, claimToken))).later;
      return { ran };
    }
    await storeSurely(db, ctx, id, claimToken, options.replay, ran.answer);
    idempotencyKeys.inc({ outcome: 'stored' });
    return { ran };
  } finally {
    if (releasing) void releasing.finally(() => clearInterval(renewal));
    else clearInterval(renewal);
    held.delete(id);
    settle();
  }
}

/** Runs a request whose key is not kept: every such request runs. */
async function notKept<T>(run: () => Promise<KeyedRun<T>>): Promise<{ ran: KeyedRun<T> }> {
  idempotencyKeys.inc({ outcome: 'not_kept' });
  return { ran: await run() };
}

/** `giveBackSoon`, counted. */
function givenBack(ctx: RequestContext, giveBack: () => Promise<void>): Promise<{ later?: Promise<void> }> {
  idempotencyKeys.inc({ outcome: 'given_back' });
  return giveBackSoon(ctx, giveBack);
}

/**
 * Gives a key back, now if the database answers. A fault is often the database itself: then the
 * key is given back once it answers again (in the background, the claim renewed meanwhile, until
 * the promise answered settles), so a retry is never told this request was interrupted.
 */
async function giveBackSoon(ctx: RequestContext, giveBack: () => Promise<void>): Promise<{ later?: Promise<void> }> {
  if ((await persistently(giveBack, [])) === undefined || givingBack >= MAX_GIVING_BACK) return {};
  givingBack += 1;
  const later = persistently(giveBack, RELEASE_RETRIES_MS).then((failure) => {
    givingBack -= 1;
    if (failure !== undefined) ctx.logger.error({ err: failure }, 'the Idempotency-Key of a request that failed could not be given back');
  });
  return { later };
}

/**
 * Counts a newly stored key against the caller's quotas (a fixed day, shared by every API process);
 * beyond one, the claim is given back and the request refused with 429.
 */
async function withinQuota(
  ctx: RequestContext,
  caller: { credential: string; public: boolean },
  options: IdempotencyOptions,
  giveBack: () => Promise<void>,
): Promise<void> {
  const message = 'Too many Idempotency-Keys stored for this caller today; send requests without one, or retry later.';
  const limiter = ctx.runtime.rateLimiter;
  try {
    // Both counts in one round trip; a refusal by either refuses the request.
    await ctx.sql.together((on) =>
      Promise.all([
        limiter.take('idempotency-keys:credential', caller.credential, options.keysPerCredential, QUOTA_WINDOW_MS, message, on),
        caller.public
          ? limiter.take('idempotency-keys:address', clientBucket(ctx.clientIp), options.keysPerAddress, QUOTA_WINDOW_MS, message, on)
          : undefined,
      ]),
    );
  } catch (error) {
    await giveBack();
    throw error;
  }
}

/**
 * Waits for the answer of the request holding the key: answers it to replay, refuses a different
 * request or one still running at the deadline, or takes the claim over when its process died
 * (undefined: the caller runs the request).
 */
async function waitForAnswer(
  db: Database,
  ctx: RequestContext,
  id: string,
  requestHash: string,
  deadline: number,
  takeOver: () => Promise<boolean>,
): Promise<StoredAnswer | undefined> {
  const perKey = waiting.get(id) ?? 0;
  if (waitingTotal >= MAX_WAITERS || perKey >= MAX_WAITERS_PER_KEY) throw stillRunning();
  waiting.set(id, perKey + 1);
  waitingTotal += 1;
  try {
    let pause = FIRST_POLL_MS;
    for (;;) {
      const row = await read(db, id);
      if (!row) {
        // Released (the first request was throttled or failed) or expired: this one may run.
        if (await takeOver()) return undefined;
        continue;
      }
      if (row.requestHash !== requestHash) {
        idempotencyKeys.inc({ outcome: 'other_request' });
        throw new AppError(
          'CONFLICT',
          'This Idempotency-Key was used with another request (another body, path or API version); use a new key for a new request.',
        );
      }
      if (row.state === 'done') return replayable(ctx, row);
      if (row.lapsed) throw interrupted();
      const now = Date.now();
      if (now >= deadline) throw stillRunning();
      const local = held.get(id);
      const timeout = local ? deadline - now : Math.min(pause, deadline - now);
      await Promise.race([local, new Promise((resolve) => setTimeout(resolve, timeout).unref())]);
      pause = Math.min(pause * 2, MAX_POLL_MS);
    }
  } finally {
    waitingTotal -= 1;
    const left = (waiting.get(id) ?? 1) - 1;
    if (left === 0) waiting.delete(id);
    else waiting.set(id, left);
  }
}

/**
 * The request that holds the key stopped before its answer was stored (its process died, or the
 * database failed it after the work): what it did may have committed, so it is not run again.
 */
function interrupted(): AppError {
  idempotencyKeys.inc({ outcome: 'interrupted' });
  return new AppError(
    'CONFLICT',
    'The request first sent with this Idempotency-Key was interrupted before it answered, and may have taken effect: read what it would have changed, then send it again with a new key if it did not.',
  );
}

function stillRunning(): AppError {
  idempotencyKeys.inc({ outcome: 'still_running' });
  return new AppError('CONFLICT', 'A request with this Idempotency-Key is still being answered; retry shortly.', undefined, {
    'Retry-After': '1',
  });
}

/** The stored answer, to send again; a refusal when it held a secret shown only once. */
function replayable(ctx: RequestContext, row: Row): StoredAnswer {
  const stored = JSON.parse(decryptSecret(row.answer!, ctx.runtime.encryptionKey)) as StoredAnswer & { readWith?: string };
  if (!row.replayable) {
    idempotencyKeys.inc({ outcome: 'secret_withheld' });
    throw new AppError(
      'CONFLICT',
      `This Idempotency-Key was answered already, and its answer held a secret that is shown only once: it is not sent again. ${stored.readWith}`,
      { created: stored.body, readWith: stored.readWith },
    );
  }
  return stored;
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

/** The body of an answer that held secrets, without them; undefined when it held none. */
function keptOf(secrets: readonly string[] | ((body: unknown) => unknown), answer: StoredAnswer): unknown {
  if (typeof secrets === 'function') return secrets(answer.body);
  return answer.status < 400 ? withoutSecrets(answer.body, secrets) : undefined;
}

/** The answer without the secrets at `paths` (dotted). */
function withoutSecrets(body: unknown, paths: readonly string[]): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  for (const path of paths) {
    const parts = path.split('.');
    let node: unknown = copy;
    for (const part of parts.slice(0, -1)) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
    if (node && typeof node === 'object') delete (node as Record<string, unknown>)[parts.at(-1)!];
  }
  return copy;
}

const TTL = `${IDEMPOTENCY_TTL_MS} milliseconds`;

/**
 * Takes the key for this request: a new row, or one that expired (a day old) — in one statement,
 * so of concurrent requests exactly one wins. A claim that lapsed is never taken: its request may
 * have done its work (see `interrupted`). With `liveSession` the key is taken only while that sales
 * session is its channel's and alive (`live` false: nothing taken), judged in the same statement.
 */
async function claim(
  db: Database,
  key: {
    id: string;
    organisationId: string | null;
    requestHash: string;
    claimToken: string;
    claimMs: number;
    liveSession: Caller['liveSession'];
  },
): Promise<{ live: boolean; claimed: boolean }> {
  const { id, organisationId, requestHash, claimToken, claimMs, liveSession } = key;
  const [row] = await systemRows<{ live: boolean; claimed: boolean }>(db, {
    text: `WITH live AS (
        SELECT $7::text IS NULL OR EXISTS (
          SELECT 1 FROM sales_sessions
           WHERE "organisationId" = $2 AND id = $8 AND "channelId" = $7 AND "expiresAt" > now()) AS live
      ), claimed AS (
        INSERT INTO idempotency_keys (id, "organisationId", "requestHash", state, "claimToken", "lockedUntil", "createdAt")
        SELECT $1, $2, $3, 'running', $4, now() + $5::interval, now() FROM live WHERE live.live
        ON CONFLICT (id) DO UPDATE SET
          "requestHash" = EXCLUDED."requestHash", state = 'running', "claimToken" = EXCLUDED."claimToken", "responseStatus" = NULL,
          answer = NULL, replayable = true, "lockedUntil" = EXCLUDED."lockedUntil", "createdAt" = now()
        WHERE idempotency_keys."createdAt" < now() - $6::interval
        RETURNING id
      )
      SELECT live.live, EXISTS (SELECT 1 FROM claimed) AS claimed FROM live`,
    values: [
      id,
      organisationId,
      requestHash,
      claimToken,
      `${claimMs} milliseconds`,
      TTL,
      liveSession?.channelId ?? null,
      liveSession?.sessionId ?? null,
    ],
  });
  return row!;
}

/**
 * Keeps a running claim from lapsing while its request runs, on the connection aside: the pool may
 * be entirely held by requests waiting on a lock, this one among them, and a claim that lapsed
 * then would tell a retry the request was interrupted while it still runs
 * (test/platform/idempotency-attacks.test.ts, "waiting for a running request").
 */
async function renew(db: Database, id: string, claimToken: string, claimMs: number): Promise<void> {
  await asideOf(db).query({
    text: `UPDATE idempotency_keys SET "lockedUntil" = now() + $3::interval
            WHERE id = $1 AND state = 'running' AND "claimToken" = $2`,
    values: [id, claimToken, `${claimMs} milliseconds`],
  });
}

async function read(db: Database, id: string): Promise<Row | undefined> {
  const rows = await systemRows<Row & { expired: boolean }>(db, {
    text: `SELECT "requestHash", state, "responseStatus", answer, replayable,
                  state = 'running' AND "lockedUntil" < now() AS lapsed,
                  "createdAt" < now() - $2::interval AS expired
             FROM idempotency_keys WHERE id = $1`,
    values: [id, TTL],
  });
  const row = rows[0];
  return row && !row.expired ? row : undefined;
}

async function store(
  db: Database,
  ctx: RequestContext,
  id: string,
  claimToken: string,
  replay: AnswerReplay,
  answer: StoredAnswer,
): Promise<void> {
  const body = typeof replay === 'object' ? keptOf(replay.secrets, answer) : undefined;
  const kept =
    body === undefined
      ? answer
      : { status: answer.status, headers: {}, body, readWith: (replay as { readWith: (answer: unknown) => string }).readWith(answer.body) };
  await systemRows(db, {
    text: `UPDATE idempotency_keys SET state = 'done', "claimToken" = NULL, "responseStatus" = $3, answer = $4, replayable = $5
            WHERE id = $1 AND "claimToken" = $2`,
    values: [id, claimToken, answer.status, encryptSecret(JSON.stringify(kept), ctx.runtime.encryptionKey), body === undefined],
  });
}

/** Pauses between attempts to store an answer whose work is done: about 6 s in all, the claim renewed meanwhile. */
const STORE_RETRIES_MS = [100, 300, 600, 1_000, 2_000, 2_000];

/**
 * Stores the answer of work that is done, trying again while the database refuses: a retry given
 * nothing would be told the request was interrupted. When it cannot, the answer is still sent and
 * the failure logged; retries with the key are then refused as interrupted, never run again.
 */
async function storeSurely(...args: Parameters<typeof store>): Promise<void> {
  const failure = await persistently(() => store(...args), STORE_RETRIES_MS);
  if (failure !== undefined) args[1].logger.error({ err: failure }, 'the answer of a request with an Idempotency-Key could not be stored');
}

/**
 * Pauses between attempts to give back a key while the database refuses: a minute in all, and a
 * key is given back within half a second of the database answering again.
 */
const RELEASE_RETRIES_MS = Array.from({ length: 120 }, () => 500);
/**
 * Keys one process gives back later at once: in a long outage, beyond them a failed request's key
 * is left to lapse (its retries are told it was interrupted) rather than adding a loop of attempts.
 */
const MAX_GIVING_BACK = 1_000;
let givingBack = 0;

/** Runs `work`, and again after each of `pauses` while it fails: undefined once it succeeded, else its last failure. */
async function persistently(work: () => Promise<unknown>, pauses: readonly number[]): Promise<unknown> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await work();
      return undefined;
    } catch (error) {
      if (attempt === pauses.length) return error ?? new Error('failed');
      await new Promise((resolve) => setTimeout(resolve, pauses[attempt]).unref());
    }
  }
}

async function release(db: Database, id: string, claimToken: string): Promise<void> {
  await systemRows(db, {
    text: `DELETE FROM idempotency_keys WHERE id = $1 AND state = 'running' AND "claimToken" = $2`,
    values: [id, claimToken],
  });
}

/** Deletes keys older than a day (the worker runs this). */
export async function pruneIdempotencyKeys(db: Database): Promise<number> {
  return db.$executeRaw`DELETE FROM idempotency_keys WHERE "createdAt" < now() - ${TTL}::interval`;
}
