import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { startTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { databaseUrl } from '../support/env.ts';
import { createOrganisation, tag } from '../support/fixtures.ts';
import { buy, createCatalogue, createChannel } from '../support/sales.ts';

/**
 * Production safety. /readyz says which check failed in words only (no driver
 * text); NODE_ENV=production refuses the example keys of docker-compose.yml and a missing
 * SMTP_URL (unless MAIL_OUTBOX_ALLOWED=true); the test cards pay only when TEST_PAYMENTS is on
 * (default on outside production, off in production); compose publishes Temporal's 7233 and 8233
 * on 127.0.0.1 only.
 */

describe('/readyz', () => {
  it('a failing database answers 503 {checks: {database: "failed", temporal: "ok"}} with no driver text', async () => {
    const missing = `tks_missing_${randomBytes(4).toString('hex')}`;
    const broken = await startTestApp({ DATABASE_URL: databaseUrl(missing) });
    try {
      const res = await fetch(`${broken.url}/readyz`);
      const text = await res.text();
      expect(res.status).toBe(503);
      expect(JSON.parse(text)).toEqual({
        error: expect.any(String),
        code: 'UNAVAILABLE',
        details: { checks: { database: 'failed', temporal: 'ok' } },
        requestId: res.headers.get('x-request-id'),
      });
      expect(text).not.toContain(missing);
      expect(text).not.toMatch(/prisma|invocation|postgres|ECONNREFUSED/i);
    } finally {
      await broken.stop();
    }
  });

  it('a failing Temporal answers {database: "ok", temporal: "failed"}, the word only', async () => {
    const broken = await startTestApp({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
    try {
      const res = await fetch(`${broken.url}/readyz`);
      expect(res.status).toBe(503);
      expect((await res.json()).details).toEqual({ checks: { database: 'ok', temporal: 'failed' } });
    } finally {
      await broken.stop();
    }
  });
});

/** Example secrets docker-compose.yml once shipped (x-service-environment): public, so a production start must refuse them. */
const COMPOSE_JWT_SIGNING_KEYS = '[{"kid":"compose-1","secret":"change-me-change-me-change-me-change-me"}]';
const COMPOSE_SECRETS_ENCRYPTION_KEY = 'Y2hhbmdlLW1lLWNoYW5nZS1tZS1jaGFuZ2UtbWUtMzI=';

/** A production configuration with real-looking secrets and SMTP: accepted today and after. */
const production = () => ({
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://ticketing:secret@db.internal:5432/ticketing',
  TEMPORAL_ADDRESS: 'temporal.internal:7233',
  JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'prod-1', secret: randomBytes(32).toString('hex') }]),
  SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  SMTP_URL: 'smtp://mail.internal:587',
});

function refusal(env: Record<string, string | undefined>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return 'started';
}

describe('starting in production', () => {
  it('refuses the example JWT_SIGNING_KEYS and SECRETS_ENCRYPTION_KEY of docker-compose.yml, naming the variable', () => {
    expect(refusal(production())).toBe('started');
    expect(refusal({ ...production(), JWT_SIGNING_KEYS: COMPOSE_JWT_SIGNING_KEYS })).toMatch(/JWT_SIGNING_KEYS/);
    expect(refusal({ ...production(), SECRETS_ENCRYPTION_KEY: COMPOSE_SECRETS_ENCRYPTION_KEY })).toMatch(/SECRETS_ENCRYPTION_KEY/);
  });

  it('refuses to run without SMTP_URL unless MAIL_OUTBOX_ALLOWED=true', () => {
    expect(refusal({ ...production(), SMTP_URL: undefined })).toMatch(/SMTP_URL/);
    expect(refusal({ ...production(), SMTP_URL: undefined, MAIL_OUTBOX_ALLOWED: 'true' })).toBe('started');
  });

  it('TEST_PAYMENTS is off by default in production and on outside it', () => {
    const config = loadConfig(production()) as Record<string, unknown>;
    expect(config.TEST_PAYMENTS).toBe(false);
    expect((loadConfig({ NODE_ENV: 'development' }) as Record<string, unknown>).TEST_PAYMENTS).toBe(true);
    expect((loadConfig({ NODE_ENV: 'test' }) as Record<string, unknown>).TEST_PAYMENTS).toBe(true);
  });
});

describe('the hosted checkout with TEST_PAYMENTS=false', () => {
  it('refuses the succeeding test card: the page says test payments are off, the order stays pending, nothing is paid', async () => {
    const app = await startTestApp({ TEST_PAYMENTS: 'false' });
    try {
      const org = await createOrganisation(app, 'live-pay');
      const catalogue = await createCatalogue(app, org);
      const { publishable } = await createChannel(app, org);
      const { order } = await buy(app, publishable, catalogue, 1, `buyer-${tag()}@pay.test`);

      const res = await fetch(`${app.url}/checkout/${order.id}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=A&cardNumber=4242424242424242&expiry=12%2F39&cvc=123',
      });
      const page = await res.text();

      expect(res.status).not.toBe(303);
      expect(page).toMatch(/test payments are off/i);
      const [row] = await query<{ status: string }>(app.database.url, 'SELECT status FROM orders WHERE id = $1', [order.id]);
      expect(row!.status).toBe('pending');
      expect(await query(app.database.url, `SELECT id FROM payments WHERE "orderId" = $1 AND status = 'succeeded'`, [order.id])).toEqual(
        [],
      );
    } finally {
      await app.stop();
    }
  });
});

describe('docker-compose.yml', () => {
  it("publishes Temporal's gRPC (7233) and UI (8233) ports on 127.0.0.1 only", () => {
    const compose = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
    const published = Object.values(compose.services as Record<string, { ports?: unknown[] }>).flatMap((service) => service.ports ?? []);
    // "HOST:CONTAINER" or "IP:HOST:CONTAINER" (short syntax), or {published, host_ip} (long syntax).
    const hostPort = (port: unknown) =>
      typeof port === 'string' ? port.split(':').at(-2) : String((port as { published?: unknown }).published);
    const temporalPorts = published.filter((port) => ['7233', '8233'].includes(hostPort(port) ?? ''));
    expect(temporalPorts.length).toBeGreaterThanOrEqual(2);
    for (const port of temporalPorts) {
      if (typeof port === 'string') expect(port).toMatch(/^127\.0\.0\.1:(7233|8233):\d+$/);
      else expect((port as { host_ip?: string }).host_ip).toBe('127.0.0.1');
    }
  });
});
