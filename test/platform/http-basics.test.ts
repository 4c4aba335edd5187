import { describe, expect, it } from 'vitest';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { startTestApp, useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation } from '../support/fixtures.ts';

const app = useTestApp();

describe('health and readiness', () => {
  it('/healthz answers ok without touching dependencies', async () => {
    const res = await fetch(`${app().url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9]{22}$/);
  });

  it('/readyz checks the database and Temporal', async () => {
    const res = await fetch(`${app().url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('/readyz answers 503 in the error envelope when Temporal is unreachable', async () => {
    const broken = await startTestApp({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
    try {
      const res = await fetch(`${broken.url}/readyz`);
      expect(res.status).toBe(503);
      const body = await res.json();
      expect(body).toMatchObject({ code: 'UNAVAILABLE', error: expect.any(String) });
      expect(body.details.checks.database).toBe('ok');
      // Only the words: driver errors are for the logs.
      expect(body.details.checks.temporal).toBe('failed');
      expect(body.requestId).toBe(res.headers.get('x-request-id'));
    } finally {
      await broken.stop();
    }
  });
});

describe('error envelope and request ids', () => {
  it('an unknown route answers 404 NOT_FOUND in the envelope with X-Request-Id', async () => {
    const res = await fetch(`${app().url}/v1/no-such-thing`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    expect(await res.json()).toEqual({ error: expect.any(String), code: 'NOT_FOUND', requestId });
  });

  it('a 404 outside the API roots also uses the envelope', async () => {
    const res = await fetch(`${app().url}/nowhere`, { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('NOT_FOUND');
  });

  it('invalid JSON answers 400 INVALID_JSON with X-Request-Id', async () => {
    const res = await fetch(`${app().url}/v1/meta/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(res.status).toBe(400);
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    expect(await res.json()).toEqual({ error: expect.any(String), code: 'INVALID_JSON', requestId });
  });

  it('invalid JSON on the sales API too', async () => {
    const res = await fetch(`${app().url}/live/sales/carts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'nope',
    });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('INVALID_JSON');
  });

  it('keeps a well-formed incoming X-Request-Id and replaces a malformed one', async () => {
    const kept = await fetch(`${app().url}/healthz`, { headers: { 'x-request-id': 'trace-123.abc' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123.abc');
    const replaced = await fetch(`${app().url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('every request id is distinct', async () => {
    const ids = await Promise.all(
      Array.from({ length: 10 }, () => fetch(`${app().url}/healthz`).then((r) => r.headers.get('x-request-id'))),
    );
    expect(new Set(ids).size).toBe(10);
  });
});

describe('API versions', () => {
  it('GET /v1/meta/versions needs no credential and answers the contract table', async () => {
    const res = await fetch(`${app().url}/v1/meta/versions`);
    expect(res.status).toBe(200);
    expect(res.headers.get('service-version')).toBe(CURRENT_VERSION);
    const body = await res.json();
    expect(body.current).toBe(CURRENT_VERSION);
    expect(body.resolved).toBe(CURRENT_VERSION);
    expect(body.versions.map((v: { date: string; status: string }) => [v.date, v.status])).toEqual([
      ['2024-11-01', 'sunset'],
      ['2025-04-01', 'deprecated'],
      ['2025-10-01', 'supported'],
      ['2026-06-01', 'supported'],
      // docs/spec/contract.md "Decided later (2026-11-26)": per-object sequence numbers in webhook payloads.
      ['2026-11-27', 'current'],
    ]);
  });

  it('resolves the Service-Version header', async () => {
    const res = await fetch(`${app().url}/v1/meta/versions`, { headers: { 'service-version': '2025-10-01' } });
    expect(res.headers.get('service-version')).toBe('2025-10-01');
    expect((await res.json()).resolved).toBe('2025-10-01');
  });

  it.each([['2024-11-01'], ['2030-01-01'], ['yesterday']])('refuses Service-Version %s with 400 UNSUPPORTED_VERSION', async (version) => {
    const res = await fetch(`${app().url}/v1/meta/versions`, { headers: { 'service-version': version } });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('UNSUPPORTED_VERSION');
  });

  it('GraphQL answers the same, with the version header', async () => {
    const res = await fetch(`${app().url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'service-version': '2025-04-01' },
      body: JSON.stringify({ query: '{ apiVersions { current resolved versions { date } } }' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('service-version')).toBe('2025-04-01');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const body = await res.json();
    expect(body.data.apiVersions).toMatchObject({ current: CURRENT_VERSION, resolved: '2025-04-01' });
  });
});

describe('GraphiQL', () => {
  it('serves a GraphiQL page whose assets are inlined (works offline)', async () => {
    const res = await fetch(`${app().url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('<title>Ticketing service</title>');
    expect(html).not.toMatch(/<script[^>]+src="https?:\/\//);
    expect(html).not.toMatch(/<link[^>]+href="https?:\/\/[^"]+\.css"/);
    expect(html.length).toBeGreaterThan(100_000);
  });
});

describe('media types and methods (contract.md)', () => {
  it('a body that is not JSON answers 415 UNSUPPORTED_MEDIA_TYPE and changes nothing', async () => {
    const org = await createOrganisation(app, 'media');
    const headers = { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug };
    const before = (await api(app, 'GET', '/v1/organisation', asAdmin(org))).body.organisation;
    for (const [type, body] of [
      ['text/plain', JSON.stringify({ name: 'Renamed' })],
      ['application/x-www-form-urlencoded', 'name=Renamed'],
    ] as const) {
      const res = await fetch(`${app().url}/v1/organisation`, { method: 'PATCH', headers: { ...headers, 'content-type': type }, body });
      expect([res.status, (await res.json()).code], type).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    }
    expect((await api(app, 'GET', '/v1/organisation', asAdmin(org))).body.organisation.name).toBe(before.name);
    // JSON with a charset, and +json, are JSON.
    const ok = await fetch(`${app().url}/v1/organisation`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ name: 'Renamed' }),
    });
    expect(ok.status).toBe(200);
    const live = await fetch(`${app().url}/live/sales/carts`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect([live.status, (await live.json()).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });

  it('a GraphQL request accepting no media type its answer can have answers 406 NOT_ACCEPTABLE in the envelope, naming those that would do', async () => {
    const post = (accept: string) =>
      fetch(`${app().url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ query: '{ apiVersions { current } }' }),
      });
    for (const accept of ['image/png', 'application/json; charset=utf-16']) {
      const res = await post(accept);
      const body = await res.json();
      expect([res.status, body.code, body.requestId], accept).toEqual([406, 'NOT_ACCEPTABLE', res.headers.get('x-request-id')]);
      expect(res.headers.get('accept')).toBe('text/event-stream, multipart/mixed, application/graphql-response+json, application/json');
      expect(body.error).toContain('application/json');
    }
    expect((await post('application/*')).status).toBe(200);
  });

  it('a known path asked with a method it does not serve answers 405 with Allow', async () => {
    const org = await createOrganisation(app, 'methods');
    const res = await api(app, 'DELETE', '/v1/events', asAdmin(org));
    expect([res.status, res.body.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
    expect(res.headers.get('allow')).toBe('GET, POST, HEAD');
    const one = await api(app, 'POST', '/v1/events/evt_whatever', asAdmin(org));
    expect([one.status, one.headers.get('allow')]).toEqual([405, 'GET, PATCH, DELETE, HEAD']);
    const live = await fetch(`${app().url}/live/sales/listings`, { method: 'DELETE' });
    expect([live.status, live.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    // An unknown path is still 404.
    expect((await api(app, 'DELETE', '/v1/no-such-thing', asAdmin(org))).status).toBe(404);
  });
});
