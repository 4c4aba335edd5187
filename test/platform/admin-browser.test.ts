import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, useTestApp } from '../support/app.ts';
import { launchBrowser } from '../support/browser.ts';
import { createOrganisation, type TestOrganisation } from '../support/fixtures.ts';

/**
 * An admin frontend in real Chromium, served from another origin than the API, calls /graphql with
 * fetch (src/http/middleware.ts adminCors): it reads every answer, a refusal before GraphQL runs
 * included, and the headers it needs (the request id, Idempotent-Replayed); its cookies never go
 * along; /v1 stays closed to it.
 */
const app = useTestApp();
let org: TestOrganisation;
let server: Server;
let browser: Browser | undefined;
let tab: Page;
let pageOrigin: string;

beforeAll(async () => {
  org = await createOrganisation(app, 'browser-admin');
  server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end('<!doctype html><html><head><meta charset="utf-8"><title>Admin</title></head><body>Admin</body></html>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  browser = await launchBrowser();
  tab = await (await browser.newContext()).newPage();
  pageOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await tab.goto(`${pageOrigin}/`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface Seen {
  status?: number;
  body?: unknown;
  requestId?: string | null;
  replayed?: string | null;
  /** Why fetch failed: the browser refused to show the answer to the page. */
  failed?: string;
}

/** fetch() from the admin page, as its frontend sends it; what the page can read of the answer. */
function fromPage(url: string, init: { method: string; headers: Record<string, string>; body?: string; credentials?: RequestCredentials }) {
  return tab.evaluate(
    async ({ url, init }): Promise<Seen> => {
      try {
        const res = await fetch(url, init);
        return {
          status: res.status,
          body: await res.json(),
          requestId: res.headers.get('x-request-id'),
          replayed: res.headers.get('idempotent-replayed'),
        };
      } catch (error) {
        return { failed: String(error) };
      }
    },
    { url, init },
  );
}

const CREATE_VENUE = 'mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id } } }';

describe('an admin frontend on another origin', () => {
  it('reads a refusal before GraphQL runs: an expired or wrong token is a 401 it can act on', async () => {
    const seen = await fromPage(`${app().url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-token' },
      body: JSON.stringify({ query: '{ accounts { nodes { id } } }' }),
    });
    expect(seen.failed).toBeUndefined();
    expect(seen.status).toBe(401);
    expect((seen.body as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('UNAUTHENTICATED');
    expect(seen.requestId).toMatch(/^req_/);
  });

  it('retries a mutation with its Idempotency-Key and reads that the answer was replayed', async () => {
    const send = () =>
      fromPage(`${app().url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${org.adminToken}`,
          'x-service-org': org.slug,
          'idempotency-key': 'browser-venue',
        },
        body: JSON.stringify({ query: CREATE_VENUE, variables: { input: { accountId: org.account.id, name: 'From the browser' } } }),
      });
    const [first, again] = [await send(), await send()];
    expect(first.failed).toBeUndefined();
    expect(again.body).toEqual(first.body);
    expect([first.replayed, again.replayed]).toEqual([null, 'true']);
  });

  it('answers only the origins GRAPHQL_CORS_ORIGINS lists, when it lists some', async () => {
    const listed = await startTestApp({ GRAPHQL_CORS_ORIGINS: 'https://admin.example.com' });
    try {
      const ask = (origin: string, method = 'POST') =>
        fetch(`${listed.url}/graphql`, {
          method,
          headers: {
            origin,
            'content-type': 'application/json',
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'authorization',
          },
          body: method === 'POST' ? JSON.stringify({ query: '{ __typename }' }) : undefined,
        });
      const allowed = await ask('https://admin.example.com');
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://admin.example.com');
      const other = await ask(pageOrigin);
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const preflight = await ask(pageOrigin, 'OPTIONS');
      expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, null]);
      // The page's own browser refuses it too.
      const seen = await fromPage(`${listed.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(seen.failed).toMatch(/Failed to fetch/);
    } finally {
      await listed.stop();
    }
  });

  it('sends no cookies along, and /v1 stays closed to it', async () => {
    const withCookies = await fromPage(`${app().url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
      body: JSON.stringify({ query: '{ __typename }' }),
      credentials: 'include',
    });
    expect(withCookies.failed).toMatch(/Failed to fetch/);
    const rest = await fromPage(`${app().url}/v1/accounts`, {
      method: 'GET',
      headers: { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
    });
    expect(rest.failed).toMatch(/Failed to fetch/);
  });
});
