import { AuthCache } from './auth/auth-cache.ts';
import { ResultCache } from './http/result-cache.ts';
import { RateLimiter, Throttle } from './limits/rate-limiter.ts';
import { loadEncryptionKey, loadSigningKeys } from './auth/keys.ts';
import { TokenService } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { createDatabase, type Database } from './db/client.ts';
import { createLogger, type Logger } from './log.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { TemporalAccess } from './temporal.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';

/** Long-lived parts shared by every request of one API process. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Database;
  temporal: TemporalAccess | undefined;
  tokens: TokenService;
  /** What authentication reads on every request, for a few seconds; see src/auth/auth-cache.ts. */
  authCache: AuthCache;
  /** Short-lived results of catalogue queries; see src/http/result-cache.ts. */
  resultCache: ResultCache;
  encryptionKey: Buffer;
  mailer: Mailer;
  /** Starts webhook delivery workflows after the transactions that record deliveries commit. */
  dispatcher: WebhookDispatcher;
  /** Rate limits shared by every API process (src/limits/rate-limiter.ts). */
  rateLimiter: RateLimiter;
  /** Growing delays after failed credential checks, shared by every API process. */
  throttle: Throttle;
  close(): Promise<void>;
}

export function createRuntime(config: Config, overrides: Partial<Pick<Runtime, 'logger' | 'db' | 'mailer'>> = {}): Runtime {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required (scripts/start.ts provides an embedded default)');
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const db = overrides.db ?? createDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  const temporal = TemporalAccess.fromConfig(config);
  const keys = loadSigningKeys(config);
  if (keys.ephemeral) logger.warn('JWT_SIGNING_KEYS is not set: tokens are signed with a key that dies with this process');
  const mailer = overrides.mailer ?? createMailer(config, db, logger);
  const dispatcher = new WebhookDispatcher(db, temporal, config, logger);
  return {
    config,
    logger,
    db,
    temporal,
    tokens: new TokenService(keys, config.ACCESS_TOKEN_TTL),
    authCache: new AuthCache(),
    resultCache: new ResultCache(),
    encryptionKey: loadEncryptionKey(config),
    mailer,
    dispatcher,
    rateLimiter: new RateLimiter(db),
    throttle: new Throttle(db),
    async close() {
      await dispatcher.stop();
      await Promise.allSettled([db.$disconnect(), temporal?.close(), mailer.close()]);
    },
  };
}
