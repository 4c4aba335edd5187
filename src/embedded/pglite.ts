// The embedded PostgreSQL used when DATABASE_URL is unset: PGlite (PostgreSQL 18 in WebAssembly,
// in this process) served over the wire protocol by pglite-socket, so `pg` and Prisma's
// adapter-pg talk to it exactly as to a real server. Zero install, fit for local use only.
//
// What differs from a real server (each was checked against pglite 0.5.14 / pglite-socket 0.2.17):
// - There is ONE database. The user, password and database name in the URL are ignored: every
//   connection lands in `postgres` as `postgres`, so the URL names the `postgres` database.
//   CREATE DATABASE succeeds but nothing can connect to the new database. Prisma commands that
//   use a shadow database (`migrate dev`, `migrate reset`, `migrate diff --from-migrations`) would
//   run it on the main database: against the embedded server use `migrate deploy` only.
// - All connections share ONE session. Queries are serialised; while one connection has a
//   transaction open the others wait for it to end (code that awaits a query on another
//   connection from inside a transaction deadlocks). SET and prepared-statement names are shared
//   too, so don't give PrismaPg a `statementNameGenerator` (two pool connections preparing the
//   same name fail with "prepared statement ... already exists"). pglite-socket runs the
//   connections' protocol messages one at a time but interleaves them, so one connection's Bind
//   could meet another's unnamed statement: wholeExchanges() below runs one connection's messages
//   at a time until the session is idle again (test/platform/embedded.test.ts).
// - LISTEN/NOTIFY: the one session listens for every connection, so pglite-socket alone would hand a
//   committed notice to the connection that committed it, not to the listeners.
//   forwardNotifications() below delivers it to them instead (test/platform/embedded.test.ts).
// - A connection beyond `maxConnections` is closed at once ("Connection terminated
//   unexpectedly" in pg). The default leaves room for several pg pools (pg's default max is 10).
// - Two PGlite instances on one directory would both write to it without noticing each other,
//   so the directory is guarded by a lock file next to it (<dataDir>.lock, holding the pid).
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler, PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { unlinkSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import path from 'node:path';

type EmbeddedLog = (msg: string) => void;

export interface EmbeddedPostgresOptions {
  /** PGlite's data directory (created when missing); the data survives restarts. */
  dataDir: string;
  /** TCP port on 127.0.0.1; default 5433 (beside a real server's 5432); 0 picks a free one. */
  port?: number | undefined;
  /** Simultaneous client connections accepted (default 100). */
  maxConnections?: number | undefined;
  log?: EmbeddedLog | undefined;
}

export interface EmbeddedPostgres {
  /** A pg / adapter-pg connection string for the single `postgres` database. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export const EMBEDDED_POSTGRES_DEFAULT_PORT = 5433;
const HOST = '127.0.0.1';

/** The embedded database's port is taken (another instance of the service?): no other database should be tried instead. */
export class EmbeddedPortInUseError extends Error {
  constructor(port: number, hint: string, options?: ErrorOptions) {
    super(`The embedded PostgreSQL cannot listen on ${HOST}:${port}: the port is in use (${hint})`, options);
    this.name = 'EmbeddedPortInUseError';
  }
}

const lockedHere = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function acquireLock(dataDir: string): Promise<string> {
  const lockFile = `${dataDir}.lock`;
  if (lockedHere.has(lockFile)) {
    throw new Error(`The embedded PostgreSQL data directory ${dataDir} is already open in this process`);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      lockedHere.add(lockFile);
      return lockFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const holder = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      // Our own pid in the file is stale (a container restarted with the same pid): the set above
      // knows every directory this process really has open.
      if (holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new Error(
          `The embedded PostgreSQL data directory ${dataDir} is in use by process ${holder} ` +
            `(lock file ${lockFile}). Stop that process, or give this one its own DATA_DIR or a DATABASE_URL.`,
          { cause: err },
        );
      }
      await rm(lockFile, { force: true });
    }
  }
}

function releaseLockSync(lockFile: string): void {
  lockedHere.delete(lockFile);
  try {
    unlinkSync(lockFile);
  } catch {
    // already gone
  }
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const requestedPort = opts.port ?? EMBEDDED_POSTGRES_DEFAULT_PORT;
  const started = Date.now();

  await mkdir(path.dirname(dataDir), { recursive: true });
  const lockFile = await acquireLock(dataDir);
  const releaseOnExit = () => releaseLockSync(lockFile);
  process.once('exit', releaseOnExit);

  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  try {
    db = new PGlite({ dataDir });
    await db.waitReady;
    server = new PGLiteSocketServer({
      db,
      host: HOST,
      port: requestedPort,
      maxConnections: opts.maxConnections ?? 100,
    });
    forwardNotifications(server);
    wholeExchanges(server);
    server.addEventListener('error', (event) => {
      const detail = (event as CustomEvent<unknown>).detail;
      log(`embedded postgres: ${detail instanceof Error ? detail.message : String(detail)}`);
    });
    try {
      await server.start();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        const hint = 'another instance of the service? pass port 0 for a free port, or set DATABASE_URL';
        throw new EmbeddedPortInUseError(requestedPort, hint, { cause: err });
      }
      throw err;
    }
  } catch (err) {
    await db?.close().catch(() => {});
    process.removeListener('exit', releaseOnExit);
    releaseLockSync(lockFile);
    throw err;
  }

  // getServerConn() reports the port actually bound, which matters for port 0.
  const port = Number(server.getServerConn().split(':').pop());
  const url = `postgresql://postgres:postgres@${HOST}:${port}/postgres?sslmode=disable`;
  log(`embedded postgres: PGlite ${dataDir} serving ${HOST}:${port} (ready in ${Date.now() - started} ms)`);

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      try {
        await server.stop();
        // The socket handlers roll back an open transaction while detaching; let them finish first.
        await new Promise((resolve) => setImmediate(resolve));
        await db.close();
      } finally {
        process.removeListener('exit', releaseOnExit);
        releaseLockSync(lockFile);
      }
    })());

  return { url, port, stop };
}

/**
 * What forwardNotifications() uses of pglite-socket beyond its typed API, as it is in 0.2.17:
 * the server's private `queryQueue` (every connection's protocol messages, executed one at a time
 * on the single session, the output streamed to `onData`) and private `handlers` (one per open
 * connection, an EventTarget with `handlerId` and its private `socket`, null once detached).
 */
interface SocketServerInternals {
  queryQueue: { enqueue(handlerId: number, message: Uint8Array, onData: (chunk: Uint8Array) => void): Promise<number> };
  handlers: Set<SocketHandlerInternals>;
}
interface SocketHandlerInternals extends EventTarget {
  readonly handlerId: number;
  socket: Socket | null;
}

/** A connection that has LISTENed, and the LISTEN/UNLISTENs it has sent that take effect when its transaction commits. */
interface Listener {
  handler: SocketHandlerInternals;
  channels: Set<string>;
  pending: Array<{ listen: boolean; channel: string }>;
  /** An error or ROLLBACK since the last ReadyForQuery: the pending changes are void at the next idle one. */
  failed: boolean;
}

const NOTIFICATION = 0x41; // 'A' NotificationResponse: int32 length, int32 pid, channel\0, payload\0
const QUERY = 0x51; // 'Q' simple Query: int32 length, sql\0
const ERROR = 0x45; // 'E' ErrorResponse
const COMMAND_COMPLETE = 0x43; // 'C' CommandComplete: int32 length, tag\0
const READY = 0x5a; // 'Z' ReadyForQuery: int32 length, status ('I' idle, 'T' in a transaction, 'E' failed one)
const IDLE = 0x49;
/** A channel nobody listens on: UNLISTEN of it answers as any UNLISTEN does and changes nothing. */
const UNUSED_CHANNEL = 'pglite_socket_forwarding_unused';

/**
 * Delivers LISTEN/NOTIFY between the connections of the embedded server as PostgreSQL does between
 * sessions. PGlite has ONE session, which every pglite-socket connection shares: when any connection
 * LISTENs the session listens, and a committed notice comes out as a NotificationResponse in the
 * output of whichever connection committed it (after CommandComplete, before ReadyForQuery), where
 * no listener reads it. So the queue that runs every connection's messages is wrapped:
 * - a simple Query's LISTEN / UNLISTEN statements (LISTEN over the extended protocol is not
 *   recognised; pg, Prisma and psql send it as a simple query) are recorded per connection and take
 *   effect when its transaction ends without error or ROLLBACK, as on a real server;
 * - an UNLISTEN is sent to PGlite as UNLISTEN of an unused channel, because the session unlistening
 *   would silence the channel for the other connections still listening on it; the session keeps
 *   listening on every channel ever listened on, and the records above decide who hears what;
 * - every NotificationResponse in a message's output is written to the socket of every other
 *   connection listening on its channel. That is safe because the queue executes exclusively: while
 *   one connection's message runs no other is in the middle of a response, so the notice lands
 *   between whole messages, as a real server's does.
 * - the notice is cut from the committing connection's own output unless it listens itself, since a
 *   real server would not send it there (pg would emit it as a 'notification' on a connection that
 *   never asked). Only whole messages are cut: an incomplete one is held until its next chunk, so the
 *   output still streams, message by message.
 * A connection is forgotten when it closes or errs, or when its socket is found not writable.
 * Throws at once if the internals it relies on (SocketServerInternals) are missing, e.g. after an
 * upgrade of pglite-socket: without them notices would silently stop arriving and caches stay off.
 */
export function forwardNotifications(server: PGLiteSocketServer): void {
  const internals = server as unknown as Partial<SocketServerInternals>;
  const queue = internals.queryQueue;
  const handlers = internals.handlers;
  const sample = queue
    ? (new PGLiteSocketHandler({ queryQueue: queue as never }) as unknown as Partial<SocketHandlerInternals>)
    : undefined;
  if (
    typeof queue?.enqueue !== 'function' ||
    !(handlers instanceof Set) ||
    typeof sample?.handlerId !== 'number' ||
    !('socket' in sample) ||
    typeof sample.addEventListener !== 'function'
  ) {
    throw new Error(
      'The embedded PostgreSQL cannot forward change notices: the installed @electric-sql/pglite-socket lacks the ' +
        'internals src/embedded/pglite.ts relies on (server.queryQueue.enqueue, server.handlers, the handlerId and socket ' +
        'of a handler; written against 0.2.17). Pin pglite-socket to 0.2.17 or adapt forwardNotifications().',
    );
  }

  const listeners = new Map<number, Listener>();
  const forget = (handlerId: number) => listeners.delete(handlerId);

  const listenerOf = (handlerId: number): Listener | undefined => {
    const known = listeners.get(handlerId);
    if (known) return known;
    const handler = whenHandlerEnds(handlers, handlerId, () => forget(handlerId));
    if (!handler) return undefined;
    const listener: Listener = { handler, channels: new Set(), pending: [], failed: false };
    listeners.set(handlerId, listener);
    return listener;
  };

  /** Records a simple Query's LISTEN / UNLISTENs; returns the message PGlite is to run instead, if any. */
  const incoming = (handlerId: number, message: Uint8Array): Uint8Array => {
    if (message[0] !== QUERY || message.length < 6) return message;
    const sql = Buffer.from(message.buffer, message.byteOffset + 5, message.length - 6).toString('utf8');
    if (!/listen/i.test(sql)) return message;
    const statements = listenStatements(sql);
    if (statements.length === 0) return message;
    const listener = listenerOf(handlerId);
    if (!listener) return message;
    let rewritten = '';
    let from = 0;
    for (const statement of statements) {
      listener.pending.push({ listen: statement.listen, channel: statement.channel });
      if (statement.listen) continue;
      rewritten += `${sql.slice(from, statement.start)}UNLISTEN ${UNUSED_CHANNEL}`;
      from = statement.end;
    }
    if (from === 0) return message;
    const text = Buffer.from(`${rewritten}${sql.slice(from)}\0`, 'utf8');
    const replaced = Buffer.alloc(5 + text.length);
    replaced[0] = QUERY;
    replaced.writeInt32BE(4 + text.length, 1);
    text.copy(replaced, 5);
    return replaced;
  };

  const deliver = (from: number, channel: string, notification: Uint8Array) => {
    for (const [handlerId, listener] of listeners) {
      if (handlerId === from || !listener.channels.has(channel)) continue;
      const socket = listener.handler.socket;
      if (socket?.writable) socket.write(Buffer.from(notification));
      else if (!socket) forget(handlerId);
    }
  };

  /** Notes what a backend message means for `handlerId`'s listening; returns whether it stays in that connection's output. */
  const outgoing = (handlerId: number, message: Buffer): boolean => {
    const listener = listeners.get(handlerId);
    switch (message[0]) {
      case NOTIFICATION: {
        const channelEnd = message.indexOf(0, 9);
        const channel = message.toString('utf8', 9, channelEnd < 0 ? message.length : channelEnd);
        deliver(handlerId, channel, message);
        return listener?.channels.has(channel) ?? false;
      }
      case ERROR:
        if (listener) listener.failed = true;
        return true;
      case COMMAND_COMPLETE:
        if (listener && message.toString('utf8', 5, message.length - 1) === 'ROLLBACK') listener.failed = true;
        return true;
      case READY:
        if (listener && message[5] === IDLE) {
          if (!listener.failed) {
            for (const { listen, channel } of listener.pending) {
              if (channel === '*') listener.channels.clear();
              else if (listen) listener.channels.add(channel);
              else listener.channels.delete(channel);
            }
          }
          listener.pending = [];
          listener.failed = false;
          if (listener.channels.size === 0) forget(handlerId);
        }
        return true;
      default:
        return true;
    }
  };

  const enqueue = queue.enqueue.bind(queue);
  queue.enqueue = async (handlerId, message, onData) => {
    const output = new MessageFilter(
      (chunk) => onData(chunk),
      (msg) => outgoing(handlerId, msg),
    );
    try {
      return await enqueue(handlerId, incoming(handlerId, message), (chunk) => output.push(chunk));
    } finally {
      output.end();
    }
  };
}

/**
 * Gives the one session to one connection at a time, from its first message until the session is
 * idle again (a ReadyForQuery saying idle ends what that connection's messages produced, and none
 * of its messages is still waiting). pglite-socket queues every connection's messages one by one
 * and, outside a transaction, takes them in arrival order: two connections' extended-protocol
 * exchanges (Parse, Bind, Describe, Execute, Sync) interleave, and one connection's Bind meets the
 * unnamed statement another just parsed: wrong answers ("bind message supplies 5 parameters, but
 * prepared statement "" requires 2"), errors, and clients left waiting for an answer that went
 * elsewhere. Under `npm start` with concurrent checkouts that was a 5xx every few hundred
 * requests and a request that never answered. A connection inside a transaction keeps the session
 * until it ends, as pglite-socket already made the others wait; the waiting connections then take
 * it in the order they asked. A connection that closes gives it up.
 */
export function wholeExchanges(server: PGLiteSocketServer): void {
  const { queryQueue: queue, handlers } = server as unknown as SocketServerInternals;
  const enqueue = queue.enqueue.bind(queue);
  /** The connection whose exchange runs, and how many of its messages are queued or running. */
  let owner: { handlerId: number; running: number; idle: boolean } | undefined;
  /** Connections waiting for the session, in the order they asked, each with its messages' starts and refusals. */
  const waiting = new Map<number, Array<{ start: () => void; refuse: (error: Error) => void }>>();
  const watched = new Set<number>();

  const handOn = () => {
    if (owner && (owner.running > 0 || !owner.idle)) return;
    owner = undefined;
    const next = waiting.entries().next();
    if (next.done) return;
    const [handlerId, starts] = next.value;
    waiting.delete(handlerId);
    owner = { handlerId, running: 0, idle: false };
    for (const { start } of starts) start();
  };
  const closed = (handlerId: number) => {
    watched.delete(handlerId);
    for (const { refuse } of waiting.get(handlerId) ?? []) refuse(new Error('Handler disconnected'));
    waiting.delete(handlerId);
    if (owner?.handlerId !== handlerId) return;
    owner = undefined;
    handOn();
  };

  queue.enqueue = (handlerId, message, onData) =>
    new Promise((resolve, reject) => {
      if (!watched.has(handlerId) && whenHandlerEnds(handlers, handlerId, () => closed(handlerId))) watched.add(handlerId);
      const start = () => {
        const mine = owner!;
        mine.running += 1;
        mine.idle = false;
        // The last six bytes of this message's output: a ReadyForQuery ('Z', length 5, status).
        // Copied, since a chunk may be a view of memory PGlite reuses; only those bytes are.
        let tail = Buffer.alloc(0);
        enqueue(handlerId, message, (chunk) => {
          tail = Buffer.concat([tail, chunk.subarray(-6)]).subarray(-6);
          onData(chunk);
        }).then(
          (bytes) => {
            mine.running -= 1;
            if (tail.length === 6 && tail[0] === READY && tail.readInt32BE(1) === 5) mine.idle = tail[5] === IDLE;
            if (owner === mine) handOn();
            resolve(bytes);
          },
          (error: unknown) => {
            mine.running -= 1;
            mine.idle = true;
            if (owner === mine) handOn();
            reject(error instanceof Error ? error : new Error(String(error)));
          },
        );
      };
      if (!owner) owner = { handlerId, running: 0, idle: false };
      if (owner.handlerId === handlerId) return start();
      const starts = waiting.get(handlerId);
      if (starts) starts.push({ start, refuse: reject });
      else waiting.set(handlerId, [{ start, refuse: reject }]);
    });
}

/** The open connection `handlerId`, with `onEnd` called when it closes or errs; undefined when it is gone. */
function whenHandlerEnds(handlers: Set<SocketHandlerInternals>, handlerId: number, onEnd: () => void): SocketHandlerInternals | undefined {
  const handler = [...handlers].find((candidate) => candidate.handlerId === handlerId);
  handler?.addEventListener('close', onEnd);
  handler?.addEventListener('error', onEnd);
  return handler;
}

/** Splits a backend's output stream into whole messages, dropping those `keep` refuses; passes the rest on in as few pieces as it can. */
class MessageFilter {
  #rest: Buffer | undefined;
  /** Set when the stream stops looking like protocol messages: from then on it passes through untouched. */
  #raw = false;

  constructor(
    private readonly onData: (chunk: Uint8Array) => void,
    private readonly keep: (message: Buffer) => boolean,
  ) {}

  push(chunk: Uint8Array): void {
    if (this.#raw) return this.onData(chunk);
    const data = this.#rest ? Buffer.concat([this.#rest, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.#rest = undefined;
    let offset = 0;
    let keptFrom = 0;
    while (data.length - offset >= 5) {
      const length = data.readInt32BE(offset + 1);
      if (length < 4) {
        this.#raw = true;
        break;
      }
      const end = offset + 1 + length;
      if (end > data.length) break;
      if (!this.keep(data.subarray(offset, end))) {
        if (offset > keptFrom) this.onData(data.subarray(keptFrom, offset));
        keptFrom = end;
      }
      offset = end;
    }
    if (this.#raw) return this.onData(data.subarray(keptFrom));
    if (offset > keptFrom) this.onData(data.subarray(keptFrom, offset));
    // The chunk may be a view of memory PGlite reuses: what waits for the next one is copied.
    if (offset < data.length) this.#rest = Buffer.from(data.subarray(offset));
  }

  /** The execution is over: whatever is left is passed on as it is. */
  end(): void {
    if (this.#rest?.length) this.onData(this.#rest);
    this.#rest = undefined;
  }
}

/**
 * The LISTEN and UNLISTEN statements of a simple query, with where each stands in it; a channel as
 * PostgreSQL names it (unquoted: lower-cased; quoted: as written), `*` for UNLISTEN *. Statements
 * are split at semicolons outside quotes.
 */
function listenStatements(sql: string): Array<{ listen: boolean; channel: string; start: number; end: number }> {
  const found: Array<{ listen: boolean; channel: string; start: number; end: number }> = [];
  let start = 0;
  let quote: string | undefined;
  for (let i = 0; i <= sql.length; i++) {
    const char = sql[i];
    if (quote) {
      if (char === quote) quote = undefined;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      continue;
    }
    if (char !== ';' && i < sql.length) continue;
    const statement = sql.slice(start, i);
    const match = /^(\s*)(UN)?LISTEN\s+("(?:[^"]|"")+"|[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*|\*)\s*$/i.exec(statement);
    if (match && (match[2] || match[3] !== '*')) {
      const name = match[3]!;
      const channel = name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name === '*' ? '*' : name.toLowerCase();
      found.push({ listen: !match[2], channel, start: start + match[1]!.length, end: i });
    }
    start = i + 1;
  }
  return found;
}
