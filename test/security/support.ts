import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startApi } from '../../server/app.ts';
import { newId } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { createRuntime } from '../../src/runtime.ts';
import { appOf, type AppRef, type TestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { createTestDatabase, query, type TestDatabase } from '../support/db.ts';
import { createStaffUser, type TestOrganisation } from '../support/fixtures.ts';
import { mailTo } from '../support/mail.ts';

export { mailTo };

/**
 * Helpers of the attack tests (issue 10). Everything here talks to the real service: HTTP, the
 * database each test app runs on, the development mail outbox (no SMTP_URL) where an invitee or a
 * customer would read their code.
 */

export interface AppPair {
  a: TestApp;
  b: TestApp;
  database: TestDatabase;
  stop(): Promise<void>;
}

/**
 * Two API processes' worth of runtime and HTTP server on ONE database (as two replicas behind a
 * load balancer), sharing signing keys so a token of one is good at the other. Limits that must
 * hold across processes are probed by alternating requests between `a` and `b`.
 */
export async function startTwoApps(env: Record<string, string> = {}): Promise<AppPair> {
  const database = await createTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${database.name}`,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: `pair-${randomBytes(3).toString('hex')}`, secret: randomBytes(32).toString('hex') }]),
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const start = async (): Promise<TestApp> => {
    const runtime = createRuntime(config, { logger: createLogger(config.LOG_LEVEL) });
    const server = await startApi(runtime, 0, '127.0.0.1');
    return { url: server.url, config, runtime, database, server, stop: () => server.stop({ graceMs: 1_000 }) };
  };
  const a = await start();
  const b = await start();
  return {
    a,
    b,
    database,
    async stop() {
      await Promise.allSettled([a.server.stop({ graceMs: 1_000 }), b.server.stop({ graceMs: 1_000 })]);
      await database.drop();
    },
  };
}

/** A client address (benchmarking range 198.18.0.0/15), distinct per call: sent as X-Forwarded-For (TRUST_PROXY=loopback believes it). */
let clients = Math.floor(Math.random() * 30_000);
export function newClientAddress(): string {
  clients += 1;
  return `198.18.${Math.floor(clients / 250) % 250}.${(clients % 250) + 1}`;
}

/** Sends as client `ip`. */
export const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** A random string of letters, for unique names and emails. */
export const tag = () => randomBytes(4).toString('hex');

/** The invitation code as the invitee reads it: from the newest invitation mail of that invitation. */
export async function mailedInvitationCode(app: AppRef, email: string, invitationId: string): Promise<string> {
  const mails = (await mailTo(app, email, 'invitation')).filter((mail) => mail.meta.invitationId === invitationId);
  const code = mails.at(-1)?.meta.code;
  if (typeof code !== 'string') throw new Error(`no invitation mail for ${email} (${invitationId})`);
  return code;
}

/** The newest magic-link code mailed to `email` (the mail is sent after the 202, so this waits for it). */
export async function mailedMagicLinkCode(app: AppRef, email: string, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const code = (await mailTo(app, email, 'customer_magic_link')).at(-1)?.meta.code;
    if (typeof code === 'string') return code;
    if (Date.now() > deadline) throw new Error(`no magic-link mail for ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A custom role with exactly `permissions` (written directly: a fixture, not the subject). */
export async function customRole(app: AppRef, org: TestOrganisation, permissions: string[], name = `Role ${tag()}`) {
  return appOf(app).runtime.db.role.create({
    data: { id: newId('role'), organisationId: org.organisation.id, name, permissions },
  });
}

/** A signed-in staff member of `org` holding `grants` (role id + account): the shared createStaffUser. */
export const staffHolding = createStaffUser;

/** An organisation API key with `scopes` (org-wide unless `accountId`), made by the organisation's admin over HTTP. */
export const apiKeyOf = (app: AppRef, org: TestOrganisation, scopes: string[], accountId?: string) =>
  createApiKey(app, org, scopes, { accountId });

/** The role's permissions as stored. */
export async function storedPermissions(app: AppRef, roleId: string): Promise<string[]> {
  const [row] = await query<{ permissions: string[] }>(app, 'SELECT permissions FROM roles WHERE id = $1', [roleId]);
  return row!.permissions;
}

/** A POST to /graphql with a raw JSON body and chosen headers; answers status, headers, parsed body and the raw text length. */
export async function postGraphql(
  app: AppRef,
  body: unknown,
  options: { token?: string; org?: string; headers?: Record<string, string>; raw?: string } = {},
) {
  const res = await fetch(`${appOf(app).url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.org ? { 'x-service-org': options.org } : {}),
      ...options.headers,
    },
    body: options.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed, length: text.length };
}

/** How many refresh tokens exist (every sign-in writes one). */
export async function refreshTokenCount(app: AppRef, personId?: string): Promise<number> {
  const [row] = await query<{ n: number }>(
    app,
    personId ? 'SELECT count(*)::int AS n FROM refresh_tokens WHERE "personId" = $1' : 'SELECT count(*)::int AS n FROM refresh_tokens',
    personId ? [personId] : [],
  );
  return row!.n;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
