import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, tag, type TestOrganisation } from '../support/fixtures.ts';

/**
 * Identity-provider URLs follow the webhook outbound policy. A tenant cannot
 * make the server call into its own network: jwksUri, jwksUriInternal, tokenEndpoint(Internal),
 * userinfoEndpoint(Internal) and authorizationEndpoint must resolve to public addresses (400
 * VALIDATION_FAILED naming the field), and at fetch time the JWKS request goes only to checked
 * addresses, following no redirect. IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS=true lifts the address
 * rule (development); it is off here except where said.
 *
 * The "internal service" is an HTTP server of this test on loopback that records every request.
 */

interface Internal {
  url: string;
  requests: string[];
  server: Server;
}

async function internalService(
  handler?: (path: string) => { status: number; headers?: Record<string, string>; body?: string },
): Promise<Internal> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const answer = handler?.(req.url ?? '/') ?? { status: 200, headers: { 'content-type': 'application/json' }, body: '{"keys":[]}' };
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, server };
}

let app: TestApp;
let org: TestOrganisation;
let internal: Internal;
let signing: { privateKey: CryptoKey; jwk: JWK };

beforeAll(async () => {
  [app, internal] = await Promise.all([startTestApp(), internalService()]);
  org = await createOrganisation(app, 'ssrf');
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  signing = { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' } };
});
afterAll(async () => {
  await app?.stop();
  await new Promise((resolve) => internal?.server.close(resolve));
});

const admin = () => asAdmin(org);

function providerBody(overrides: Record<string, unknown>) {
  const issuer = `https://idp-${tag()}.example.com`;
  return {
    providerType: 'oidc',
    issuer,
    jwksUri: `${issuer}/jwks`,
    clientId: 'portal',
    ...overrides,
  };
}

/** A token naming `issuer`, signed with a key of this test: the server must fetch the JWKS to judge it. */
function tokenFor(issuer: string) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: 'someone@example.com', email_verified: true })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer(issuer)
    .setAudience('portal')
    .setSubject('someone')
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(signing.privateKey);
}

/** A provider stored as an older release (or a DNS change) could have left it: the URL check never ran. */
async function storedProvider(o: TestOrganisation, urls: { jwksUri: string; jwksUriInternal?: string }) {
  const issuer = `https://stored-${tag()}.example.com`;
  await app.runtime.db.identityProvider.create({
    data: {
      id: newId('identityProvider'),
      organisationId: o.organisation.id,
      providerType: 'oidc',
      issuer,
      jwksUri: urls.jwksUri,
      jwksUriInternal: urls.jwksUriInternal ?? null,
      clientId: 'portal',
      scopes: ['openid', 'email'],
      allowedClientIds: [],
    },
  });
  return issuer;
}

function expectFederationRefused(res: { status: number; body: any }) {
  expect([401, 503]).toContain(res.status);
  expect(['UNAUTHENTICATED', 'UNAVAILABLE']).toContain(res.body.code);
}

describe('creating an identity provider', () => {
  const targets = [
    ['jwksUri', 'http://127.0.0.1:8080/jwks'],
    ['jwksUriInternal', 'http://169.254.169.254/latest/meta-data/'],
    ['tokenEndpoint', 'http://10.0.0.5/token'],
    ['tokenEndpointInternal', 'http://192.168.1.1/token'],
    ['userinfoEndpoint', 'http://[::1]:9000/userinfo'],
    ['userinfoEndpointInternal', 'http://172.16.0.10/userinfo'],
    ['authorizationEndpoint', 'http://localhost:3000/authorize'],
  ] as const;

  it.each(targets)('refuses %s on an internal address (%s) with 400 naming the field; nothing is stored', async (field, url) => {
    const body = providerBody({ [field]: url });
    const res = await api(app, 'POST', '/v1/identity-providers', { ...admin(), body });
    expect({ status: res.status, code: res.body?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(field);
    expect(await app.runtime.db.identityProvider.findFirst({ where: { issuer: body.issuer } })).toBeNull();
  });

  it('with IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS=true a loopback provider is accepted (development)', async () => {
    const dev = await startTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
    try {
      const devOrg = await createOrganisation(dev, 'ssrf-dev');
      const res = await api(dev, 'POST', '/v1/identity-providers', {
        token: devOrg.adminToken,
        org: devOrg.slug,
        body: providerBody({ jwksUri: `${internal.url}/jwks` }),
      });
      expect(res.status).toBe(201);
    } finally {
      await dev.stop();
    }
  });
});

describe('anonymous POST /v1/auth/federate', () => {
  it.each([
    ['jwksUri on loopback', (base: string) => ({ jwksUri: `${base}/jwks` })],
    [
      'jwksUri naming localhost (resolved, then refused)',
      (base: string) => ({ jwksUri: `${base.replace('127.0.0.1', 'localhost')}/jwks` }),
    ],
    [
      'jwksUriInternal on loopback',
      (base: string) => ({ jwksUri: 'https://idp.example.com/jwks', jwksUriInternal: `${base}/internal-jwks` }),
    ],
  ])('never makes the server fetch a stored provider with %s; answers 401/503', async (_label, urls) => {
    const issuer = await storedProvider(org, urls(internal.url));
    const before = internal.requests.length;

    const res = await api(app, 'POST', '/v1/auth/federate', { body: { token: await tokenFor(issuer) } });

    expect(internal.requests.slice(before)).toEqual([]);
    expectFederationRefused(res);
  });

  it('follows no redirect from a provider JWKS address (regression guard; private addresses allowed here)', async () => {
    const target = await internalService(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: [signing.jwk] }),
    }));
    const redirector = await internalService(() => ({ status: 302, headers: { location: `${target.url}/jwks` } }));
    const dev = await startTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
    try {
      const devOrg = await createOrganisation(dev, 'ssrf-redirect');
      const issuer = `https://redirecting-${tag()}.example.com`;
      const created = await api(dev, 'POST', '/v1/identity-providers', {
        token: devOrg.adminToken,
        org: devOrg.slug,
        body: { providerType: 'oidc', issuer, jwksUri: `${redirector.url}/jwks`, clientId: 'portal' },
      });
      expect(created.status).toBe(201);

      const res = await api(dev, 'POST', '/v1/auth/federate', { body: { token: await tokenFor(issuer) } });

      expect(redirector.requests).toEqual(['GET /jwks']);
      expect(target.requests).toEqual([]);
      expectFederationRefused(res);
    } finally {
      await dev.stop();
      await Promise.all([target, redirector].map((s) => new Promise((resolve) => s.server.close(resolve))));
    }
  });
});
