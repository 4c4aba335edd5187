import { z } from 'zod';

/**
 * The service's configuration, parsed once from the environment at start-up. Nothing else in the
 * code base reads process.env for settings: everything takes a Config (or a part of it).
 */

const duration = z
  .string()
  .regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as 500ms, 15s, 5m, 2h or 1d')
  .transform(parseDuration);

export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`invalid duration "${text}"`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms'];
  return Number(match[1]) * unit;
}

const booleanFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((v) => v === 'true' || v === '1');

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().default('0.0.0.0'),
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'a postgres:// URL').optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('ticketing'),
  TEMPORAL_CLI_PATH: z.string().optional(),
  DATA_DIR: z.string().default('.data'),
  /**
   * JWT signing keys: a JSON array of {kid, secret} (HS256, secret at least 32 bytes); the first
   * signs, every one verifies, so keys rotate by prepending a new one. Unset in development: a key
   * is derived and kept under DATA_DIR. Required in production.
   */
  JWT_SIGNING_KEYS: z.string().optional(),
  /** 32-byte key (base64 or hex) that encrypts webhook signing secrets at rest. */
  SECRETS_ENCRYPTION_KEY: z.string().optional(),
  ACCESS_TOKEN_TTL: duration.default(parseDuration('15m') as never),
  REFRESH_TOKEN_TTL: duration.default(parseDuration('30d') as never),
  /**
   * Which proxies' X-Forwarded-For to believe for the client address (per-client limits, logs):
   * express's `trust proxy` (loopback, a comma-separated list of addresses/CIDRs, a hop count,
   * true or false). Behind a load balancer, name it, or every client shares its address.
   */
  TRUST_PROXY: z.string().default('loopback'),
  /** How long a pending order holds its tickets before it is cancelled and they return to sale. */
  ORDER_HOLD_TTL: duration.default(parseDuration('15m') as never),
  /** Lifetime of a magic-link sign-in code (single use). */
  MAGIC_LINK_TTL: duration.default(parseDuration('15m') as never),
  /** Lifetime of a customer token (GET /live/sales/me/orders). */
  CUSTOMER_TOKEN_TTL: duration.default(parseDuration('1h') as never),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default('5s,5m,30m,2h,5h,10h,10h')
    .transform((text, ctx) => {
      try {
        return text.trim() === '' ? [] : text.split(',').map((part) => parseDuration(part));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'comma-separated durations such as 5s,5m,30m' });
        return z.NEVER;
      }
    }),
  WEBHOOK_ATTEMPT_TIMEOUT: duration.default(parseDuration('15s') as never),
  WEBHOOK_ALLOW_PRIVATE_URLS: booleanFlag,
  /**
   * First attempts go out in batches (one Temporal workflow each): a batch closes at this many
   * deliveries, or this long after its first delivery arrived, whichever comes first.
   */
  WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(64).default(64),
  WEBHOOK_BATCH_WINDOW: duration.default(parseDuration('50ms') as never),
  /**
   * Batches one process starts per second at most, but for full ones: beyond it deliveries wait
   * for the next start and batches grow, so the Temporal work per delivery shrinks as load rises.
   */
  WEBHOOK_BATCHES_PER_SECOND: z.coerce.number().min(0.1).max(1_000).default(5),
  /**
   * Attempts in flight at once, across every worker process (counted in PostgreSQL): per
   * endpoint, and per organisation over all its endpoints. Deliveries beyond them wait.
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: z.coerce.number().int().min(1).max(10_000).default(32),
  WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION: z.coerce.number().int().min(1).max(100_000).default(256),
  /** Circuit breaker: after this many consecutive failed attempts an endpoint is left alone for WEBHOOK_BREAKER_COOLDOWN. */
  WEBHOOK_BREAKER_THRESHOLD: z.coerce.number().int().min(1).max(10_000).default(10),
  WEBHOOK_BREAKER_COOLDOWN: duration.default(parseDuration('30s') as never),
  /** An endpoint whose every attempt failed for this long is disabled (with disabledReason). */
  WEBHOOK_DISABLE_AFTER: duration.default(parseDuration('5d') as never),
  /** How long source events, deliveries and attempts are kept; the worker prunes older ones. */
  WEBHOOK_RETENTION: duration.default(parseDuration('30d') as never),
  /** Webhook endpoints one account may have (contract: a limit refused with 400). */
  WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT: z.coerce.number().int().min(1).max(1_000).default(20),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'an smtp:// or smtps:// URL').optional(),
  MAIL_FROM: z.string().default('Ticketing <no-reply@localhost>'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.output<typeof schema>;

export class ConfigError extends Error {}

/** Empty strings count as unset, the way shells and compose files usually mean them. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key in schema.shape && value !== undefined && value !== ''),
  );
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = result.data;
  if (config.NODE_ENV === 'production') {
    const missing = (['DATABASE_URL', 'TEMPORAL_ADDRESS', 'JWT_SIGNING_KEYS', 'SECRETS_ENCRYPTION_KEY'] as const).filter(
      (key) => !config[key],
    );
    if (missing.length > 0) throw new ConfigError(`Invalid configuration: production requires ${missing.join(', ')}`);
  }
  return config;
}

export function publicUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/$/, '');
}
