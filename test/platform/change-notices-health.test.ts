import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_CACHE_TTL_MS, AuthCache } from '../../src/auth/auth-cache.ts';
import { ChangeNotices, HEALTH_CHECK_INTERVAL_MS, HEALTH_CHECK_TIMEOUT_MS, STARTUP_GRACE_MS } from '../../src/db/change-notices.ts';
import { newId } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, query, type TestDatabase } from '../support/db.ts';

/**
 * The change-notice connection of an API process, reaching the real test PostgreSQL through a TCP
 * path the test controls. Frozen, the path stops moving bytes both ways while every socket stays
 * open: the half-open connection a silent network failure leaves, where neither an error nor an end
 * ever arrives. Notices missed then must stop being trusted within the health check's bound, so the
 * auth cache reads PostgreSQL again instead of serving what a lost notice would have removed.
 */

const BOUND_MS = HEALTH_CHECK_INTERVAL_MS + HEALTH_CHECK_TIMEOUT_MS;
/** Timers fire late on a busy machine. */
const TIMER_SLACK_MS = 500;

/** A TCP path to PostgreSQL that can freeze (bytes stop, sockets stay open) or refuse new connections. */
class PostgresPath {
  #frozen = false;
  refusing = false;
  readonly #sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  static async open(databaseUrl: string): Promise<PostgresPath> {
    const target = new URL(databaseUrl);
    const server = net.createServer();
    const url = new URL(databaseUrl);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const path = new PostgresPath(server, url.toString());
    server.on('connection', (client) => path.#carry(client, target));
    return path;
  }

  #carry(client: net.Socket, target: URL): void {
    if (this.refusing) return void client.destroy();
    const server = net.connect(Number(target.port || 5432), target.hostname);
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      this.#sockets.add(from);
      from.on('data', (chunk) => to.write(chunk));
      from.on('error', () => undefined);
      from.on('close', () => {
        this.#sockets.delete(from);
        to.destroy();
      });
      if (this.#frozen) from.pause();
    }
  }

  freeze(): void {
    this.#frozen = true;
    for (const socket of this.#sockets) socket.pause();
  }

  thaw(): void {
    this.#frozen = false;
    for (const socket of this.#sockets) socket.resume();
  }

  /** Cuts every connection now (each side sees it end). */
  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Milliseconds until `check` holds, polling every 10 ms; fails after `limitMs`. */
async function within(limitMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface LogLine {
  level: string;
  msg: string;
  reason?: unknown;
}

let database: TestDatabase;
let path: PostgresPath;
let notices: ChangeNotices;
let lines: LogLine[];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** Change notices over a fresh path, logging to `lines`, with a real auth cache subscribed as the API runtime does. */
async function listenThroughPath(options: { refusing?: boolean } = {}) {
  path = await PostgresPath.open(database.url);
  path.refusing = options.refusing ?? false;
  lines = [];
  const logger = createLogger('debug', 'test', { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  notices = new ChangeNotices(path.url, logger);
  const cache = new AuthCache(AUTH_CACHE_TTL_MS, () => notices.listening);
  notices.subscribe(cache);
  notices.start();
  return cache;
}

afterEach(async () => {
  path.thaw();
  await notices?.stop();
  await path?.close();
});

/** An organisation written straight to the database, and what the auth cache would load about it. */
async function organisation() {
  const id = newId('organisation');
  await query(
    database.url,
    `INSERT INTO organisations (id, slug, name, "apiVersion", "updatedAt") VALUES ($1, $1, 'Before', '2026-01-01', now())`,
    [id],
  );
  let loads = 0;
  return {
    rename: (name: string) => query(database.url, 'UPDATE organisations SET name = $2 WHERE id = $1', [id, name]),
    /** The cached answer: the organisation's name as the cache serves it, loading from PostgreSQL on a miss. */
    name: (cache: AuthCache) =>
      cache.get(`org:${id}`, async () => {
        loads += 1;
        const [row] = await query<{ name: string }>(database.url, 'SELECT name FROM organisations WHERE id = $1', [id]);
        return { value: row!.name, organisationId: id };
      }),
    loads: () => loads,
  };
}

describe('change notices over a connection that goes half-open', { timeout: 60_000 }, () => {
  it(`stop being trusted within HEALTH_CHECK_INTERVAL_MS + HEALTH_CHECK_TIMEOUT_MS (${BOUND_MS / 1000} s): the auth cache reads again, and is back once the path thaws`, async () => {
    const cache = await listenThroughPath();
    await within(10_000, () => notices.listening);
    const org = await organisation();
    // Trusted: a second read is served from the cache. (The insert's own notice may arrive after the
    // first read and drop the entry once, as any change does; so the pair is asked until it settles.)
    await within(5_000, async () => {
      const before = org.loads();
      const names = [await org.name(cache), await org.name(cache)];
      return names.every((name) => name === 'Before') && org.loads() - before <= 1;
    });
    // Healthy: a change made elsewhere reaches the cache through the path within milliseconds.
    await org.rename('Healthy');
    await within(1_000, async () => (await org.name(cache)) === 'Healthy');

    path.freeze();
    const frozenAt = Date.now();
    await org.rename('While frozen');
    await within(BOUND_MS + TIMER_SLACK_MS, () => !notices.listening);
    expect(Date.now() - frozenAt).toBeLessThanOrEqual(BOUND_MS + TIMER_SLACK_MS);
    const loadsBefore = org.loads();
    expect(await org.name(cache)).toBe('While frozen');
    expect(await org.name(cache)).toBe('While frozen');
    expect(org.loads()).toBe(loadsBefore + 2);

    path.thaw();
    await within(15_000, () => notices.listening);
    const loadsBack = org.loads();
    expect([await org.name(cache), await org.name(cache), org.loads()]).toEqual(['While frozen', 'While frozen', loadsBack + 1]);
    await org.rename('Back');
    await within(1_000, async () => (await org.name(cache)) === 'Back');
  });
});

describe('the log of change notices', { timeout: 90_000 }, () => {
  it('says once that they are unavailable however many reconnections fail (a start gets STARTUP_GRACE_MS), once that they are back, and again when lost again', async () => {
    const began = Date.now();
    await listenThroughPath({ refusing: true });
    const failures = () => lines.filter((line) => /change notices (still |not yet )?(un)?available/.test(line.msg));
    const warnings = () => failures().filter((line) => line.level === 'warn');
    await within(STARTUP_GRACE_MS + 10_000, () => warnings().length > 0);
    expect(Date.now() - began).toBeGreaterThanOrEqual(STARTUP_GRACE_MS);
    const failed = failures().length;
    expect(failed).toBeGreaterThanOrEqual(4);
    await within(10_000, () => failures().length > failed);
    expect(warnings()).toHaveLength(1);
    // The reason as a sentence, not an error object with its stack.
    expect(typeof failures()[0]!.reason).toBe('string');
    expect(JSON.stringify(lines)).not.toMatch(/\bat \S+:\d+:\d+|"stack"/);

    path.refusing = false;
    await within(15_000, () => notices.listening);
    expect(lines.filter((line) => line.level === 'info' && /back/.test(line.msg))).toHaveLength(1);

    path.cut();
    await within(5_000, () => !notices.listening);
    await within(5_000, () => warnings().length === 2);
  });
});
