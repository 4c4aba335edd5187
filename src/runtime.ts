import { AUTH_TABLES, AuthCache } from './auth/auth-cache.ts';
import { ChangeNotices } from './db/change-notices.ts';
import { LiveHub } from './live/hub.ts';
import { Live } from './live/live.ts';
import { ResultCache } from './http/result-cache.ts';
import { SharedPages } from './http/shared-pages.ts';
import { RateLimiter, Throttle } from './limits/rate-limiter.ts';
import { loadEncryptionKey, loadSigningKeys } from './auth/keys.ts';
import { TokenService } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { closeDatabase, createDatabase, type Database } from './db/client.ts';
import { createLogger, type Logger } from './log.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { observeDatabase } from './metrics.ts';
import { TemporalAccess } from './temporal.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';

/** Every table that announces changes: any of them can change a cached catalogue answer. */
const CATALOGUE_CHANGES: ReadonlySet<string> = new Set([
  ...AUTH_TABLES,
  'sales_channel_events',
  'venues',
  'events',
  'event_occurrences',
  'ticket_types',
  'inventories',
]);

/**
 * What a sales channel's listings read beside the inventory: a change of these forgets the shared
 * listings pages of its organisation. Not the inventory, nor customers: an on-sale's every checkout
 * moves the one and may add to the other, and would empty the page for every buyer.
 */
const LISTED_CATALOGUE: ReadonlySet<string> = new Set([
  'organisations',
  'accounts',
  'sales_channels',
  'sales_channel_events',
  'events',
  'event_occurrences',
  'ticket_types',
]);

/** Long-lived parts shared by every request of one API process. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Database;
  temporal: TemporalAccess | undefined;
  tokens: TokenService;
  /** PostgreSQL's change notices: what keeps every process's caches true (src/db/change-notices.ts). */
  notices: ChangeNotices;
  /** GraphQL subscriptions of this process: their streams and bounds (src/live/). */
  live: Live;
  /** What authentication reads on every request; see src/auth/auth-cache.ts. */
  authCache: AuthCache;
  /** Short-lived results of catalogue queries; see src/http/result-cache.ts. */
  resultCache: ResultCache;
  /** Sales channels' listings pages, read once for every buyer asking in the same moment; see src/http/shared-pages.ts. */
  listings: SharedPages<unknown>;
  encryptionKey: Buffer;
  mailer: Mailer;
  /** Starts webhook delivery workflows after the transactions that record deliveries commit. */
  dispatcher: WebhookDispatcher;
  /** Rate limits shared by every API process (src/limits/rate-limiter.ts). */
  rateLimiter: RateLimiter;
  /** Set when the process is stopping: readiness answers 503 so load balancers stop sending requests. */
  draining: boolean;
  /** Growing delays after failed credential checks, shared by every API process. */
  throttle: Throttle;
  close(): Promise<void>;
}

/** Connections each API process opens at most to read what its subscriptions stream (beside DATABASE_POOL_SIZE). */
export const LIVE_READ_CONNECTIONS = 2;

export function createRuntime(config: Config, overrides: Partial<Pick<Runtime, 'logger' | 'db' | 'mailer'>> = {}): Runtime {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required (scripts/start.ts provides an embedded default)');
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const db =
    overrides.db ??
    createDatabase({
      url: config.DATABASE_URL,
      poolSize: config.DATABASE_POOL_SIZE,
      preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
    });
  const temporal = TemporalAccess.fromConfig(config);
  const keys = loadSigningKeys(config);
  if (keys.ephemeral) logger.warn('JWT_SIGNING_KEYS is not set: tokens are signed with a key that dies with this process');
  const mailer = overrides.mailer ?? createMailer(config, db, logger);
  const dispatcher = new WebhookDispatcher(db, temporal, config, logger);
  const notices = new ChangeNotices(config.DATABASE_URL, logger);
  const listening = () => notices.listening;
  const authCache = new AuthCache(undefined, listening);
  const resultCache = new ResultCache(config.RESULT_CACHE_TTL, listening, CATALOGUE_CHANGES, (caller) =>
    authCache.readBeforeChange(caller),
  );
  const listings = new SharedPages<unknown>(config.LISTINGS_SHARED_FOR, listening, LISTED_CATALOGUE);
  resultCache.alsoForget(listings);
  notices.subscribe(authCache);
  notices.subscribe(resultCache);
  notices.subscribe(listings);
  // The subjects of live events are read on connections of their own (src/live/live.ts), opened
  // when a subscription first needs one; a database handed in (tests, the embedded default's
  // single connection) is shared.
  const liveReads = overrides.db
    ? db
    : createDatabase({
        url: config.DATABASE_URL,
        poolSize: LIVE_READ_CONNECTIONS,
        preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
      });
  const live = new Live(new LiveHub(db, config, logger), config, listening, liveReads, logger);
  notices.listenLive(live.hub);
  notices.subscribe(live);
  notices.start();
  const unobserve = observeDatabase(db, { backlog: true });
  return {
    config,
    logger,
    db,
    temporal,
    tokens: new TokenService(keys, config.ACCESS_TOKEN_TTL),
    notices,
    live,
    authCache,
    resultCache,
    listings,
    encryptionKey: loadEncryptionKey(config),
    mailer,
    dispatcher,
    rateLimiter: new RateLimiter(db),
    draining: false,
    throttle: new Throttle(db),
    async close() {
      unobserve();
      await live.close();
      await Promise.all([dispatcher.stop(), notices.stop()]);
      await Promise.allSettled([
        closeDatabase(db),
        liveReads === db ? undefined : closeDatabase(liveReads),
        temporal?.close(),
        mailer.close(),
      ]);
    },
  };
}
