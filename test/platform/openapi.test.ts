import { readFileSync } from 'node:fs';
import { validate as validateOpenApi, compileErrors } from '@readme/openapi-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RestRoute } from '../../rest-compat/route.ts';
import { buildOpenApiDocument, operationIdOf, printOpenApiDocument } from '../../rest-compat/openapi.ts';
import { v1Routes } from '../../rest-compat/v1-routes.ts';
import { liveRoutes } from '../../rest-compat/live-routes.ts';
import { LIVE_OPENAPI_PATH, OPENAPI_PATH, printedLiveOpenApi, printedOpenApi } from '../../scripts/print-openapi.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, magicLinkCode } from '../support/credentials.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { documentUnderTest, expectDocumentedResponse, matchPathTemplate, responseProblems } from '../support/openapi-check.ts';
import { createCatalogue, createChannel, storefront } from '../support/sales.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

describe('the OpenAPI document of /v1', () => {
  it('schema/openapi.json is the document built from the route table', () => {
    expect(
      readFileSync(OPENAPI_PATH, 'utf8') === printedOpenApi(),
      'schema/openapi.json is out of date: run `npx tsx scripts/print-openapi.ts` and commit the result',
    ).toBe(true);
  });

  it('is deterministic', () => {
    expect(printOpenApiDocument(buildOpenApiDocument(v1Routes))).toBe(printedOpenApi());
  });

  it('documents every route of the table with its method, and nothing else', () => {
    const document = documentUnderTest();
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => METHODS.includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    const table = v1Routes.map((route) => `${route.method} ${route.path}`);
    expect([...documented].sort()).toEqual([...table].sort());
    for (const route of v1Routes) {
      const operation = document.paths[route.path]![route.method.toLowerCase() as 'get']!;
      expect(operation.operationId).toBe(operationIdOf(route.method, route.path));
      expect(operation.summary).toBe(route.summary);
      expect(operation.tags).toEqual([route.tag]);
      expect(Object.keys(operation.responses)[0]).toBe(String(route.status ?? 200));
    }
  });

  it('gives every route a documented success body', () => {
    const undocumented = v1Routes.filter((route) => !route.response).map((route) => `${route.method} ${route.path}`);
    expect(undocumented, 'routes without a `response` schema').toEqual([]);
  });

  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser)', async () => {
    const result = await validateOpenApi(structuredClone(documentUnderTest()) as never, { resolve: { external: false } });
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
  });

  it('the validator does catch a broken document', async () => {
    const broken = structuredClone(documentUnderTest());
    const withParam = Object.keys(broken.paths).find((path) => path.includes('{'));
    if (withParam) {
      for (const operation of Object.values(broken.paths[withParam]!)) operation.parameters = [];
      const result = await validateOpenApi(broken as never, { resolve: { external: false } });
      expect(result.valid).toBe(false);
    }
  });

  it("hoists recursive and id'd zod schemas into components.schemas, so their refs resolve in the document", async () => {
    const tree: z.ZodType = z.object({
      name: z.string(),
      get children() {
        return z.array(tree);
      },
    });
    const thing = z.object({ name: z.string() }).meta({ id: 'Thing' });
    const base = { tag: 'T', organisation: true, operation: '', result: (data: unknown) => data };
    const routes: RestRoute[] = [
      {
        ...base,
        method: 'GET',
        path: '/trees/{id}',
        summary: 'A tree.',
        params: z.object({ id: z.string() }),
        response: z.object({ tree, thing }),
      },
      { ...base, method: 'POST', path: '/things', summary: 'A thing.', body: thing, status: 201, response: thing },
    ];
    const document = buildOpenApiDocument(routes);
    expect(Object.keys(document.components.schemas)).toEqual([
      'ErrorResponse',
      'ValidationIssue',
      'GetTreesByIdResponseDef0',
      'Thing',
      'ThingInput',
    ]);
    expect(JSON.stringify(document)).not.toContain('#/$defs/');
    const result = await validateOpenApi(structuredClone(document) as never, { resolve: { external: false } });
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('requires X-Service-Org and a credential exactly as the route table says', () => {
    const document = documentUnderTest();
    for (const route of v1Routes) {
      const operation = document.paths[route.path]![route.method.toLowerCase() as 'get']!;
      const orgHeader = operation.parameters.some((p) => p.$ref === '#/components/parameters/X-Service-Org');
      expect(orgHeader, `${route.method} ${route.path}`).toBe(route.organisation);
      const open = route.path === '/meta/versions' || route.path.startsWith('/auth/');
      if (route.organisation || !open) {
        expect(operation.security, `${route.method} ${route.path}`).toEqual([{ staffOrEmbedToken: [] }, { organisationApiKey: [] }]);
      } else {
        expect(operation.security, `${route.method} ${route.path}`).toEqual([]);
      }
    }
  });

  it('the checker matches concrete paths to templates, literal segments first', () => {
    expect(matchPathTemplate('/v1/roles/rol_x?x=1')).toBe('/roles/{id}');
    expect(matchPathTemplate('/meta/versions')).toBe('/meta/versions');
    expect(matchPathTemplate('/v1/nothing/here')).toBeUndefined();
    expect(responseProblems('GET', '/roles', { status: 200, body: { roles: [{ id: 1 }] } }).length).toBeGreaterThan(0);
    expect(responseProblems('GET', '/roles/{id}', { status: 404, body: { error: 'x', code: 'CONFLICT', requestId: 'r' } })).not.toEqual([]);
  });
});

describe('served and honoured by the running API', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  beforeAll(async () => {
    org = await createOrganisation(app, 'openapi');
  });

  const as = () => asAdmin(org);

  it('GET /v1/openapi.json answers the document without a credential or X-Service-Org', async () => {
    const res = await fetch(`${app().url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await res.text()).toBe(printedOpenApi());
  });

  it('answers of the representative routes match their documented schemas', async () => {
    const check = async (method: string, template: string, path: string, options: Parameters<typeof api>[3] = {}, status?: number) => {
      const res = await api(app, method, `/v1${path}`, options);
      if (status !== undefined) expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
      expectDocumentedResponse(method, template, res);
      return res;
    };

    await check('GET', '/meta/versions', '/meta/versions', {}, 200);
    await check('POST', '/auth/login', '/auth/login', { body: { email: org.email, password: org.password }, org: org.slug }, 200);
    await check('GET', '/me', '/me', as(), 200);
    await check('GET', '/me/roles', '/me/roles', as(), 200);
    await check('GET', '/me/permissions', '/me/permissions?resource=roles', as(), 200);
    await check('GET', '/roles', '/roles', as(), 200);
    const created = await check('POST', '/roles', '/roles', { ...as(), body: { name: 'Door', permissions: ['passes.redeem'] } }, 201);
    await check('GET', '/roles/{id}', `/roles/${created.body.id}`, as(), 200);
    await check('GET', '/api-keys', '/api-keys', as(), 200);
    const key = await check('POST', '/api-keys', '/api-keys', { ...as(), body: { name: 'Box office', scopes: ['roles.read'] } }, 201);
    await check('GET', '/api-keys', '/api-keys', as(), 200);

    // Error answers, each in the ErrorResponse shape of its status.
    await check('GET', '/roles/{id}', '/roles/rol_missing', as(), 404);
    await check('POST', '/roles', '/roles', { ...as(), body: { name: 'No permissions', permissions: 'x' } }, 400);
    await check('POST', '/roles', '/roles', { ...as(), headers: { 'content-type': 'application/json' }, body: undefined }, 400);
    await check('GET', '/me', '/me', { org: org.slug }, 401);
    await check('GET', '/me', '/me', { token: key.body.key, org: org.slug }, 403);
    await check('GET', '/roles', '/roles', { token: org.adminToken }, 400);
    await check('GET', '/meta/versions', '/meta/versions', { headers: { 'service-version': '2024-11-01' } }, 400);
    await check('POST', '/auth/login', '/auth/login', { body: { email: org.email, password: 'wrong password' } }, 401);
  });

  it('an invalid JSON body answers the documented 400', async () => {
    const res = await fetch(`${app().url}/v1/roles`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug, 'content-type': 'application/json' },
      body: '{"name":',
    });
    const body = await res.json();
    expect(body.code).toBe('INVALID_JSON');
    expectDocumentedResponse('POST', '/v1/roles', { status: res.status, body, headers: res.headers });
  });
});

describe('the OpenAPI document of the sales API (/live)', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  beforeAll(async () => {
    org = await createOrganisation(app, 'openlive');
  });

  it('schema/openapi-live.json is the document built from the /live route table, valid OpenAPI 3.1, served at /live/openapi.json', async () => {
    expect(
      readFileSync(LIVE_OPENAPI_PATH, 'utf8') === printedLiveOpenApi(),
      'schema/openapi-live.json is out of date: run `npx tsx scripts/print-openapi.ts` and commit the result',
    ).toBe(true);
    const document = documentUnderTest('sales');
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(liveRoutes.map((route) => `${route.method} ${route.path}`).sort());
    expect(liveRoutes.filter((route) => !route.response)).toEqual([]);
    expect(document.paths['/sales/me/orders']!.get!.security).toEqual([{ customerToken: [] }]);
    expect(document.paths['/sales/carts']!.post!.security).toEqual([{ channelKey: [] }, { channelKeyHeader: [] }]);
    const result = await validateOpenApi(structuredClone(document) as never, { resolve: { external: false } });
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);
    const served = await fetch(`${app().url}/live/openapi.json`);
    expect(served.status).toBe(200);
    expect(await served.text()).toBe(printedLiveOpenApi());
  });

  it('answers of every sales route match their documented schemas', async () => {
    const catalogue = await createCatalogue(app, org, { capacity: 5 });
    const channel = await createChannel(app, org);
    const shop = storefront(app, channel.publishable);
    const check = async (method: string, path: string, body?: unknown, status?: number, headers: Record<string, string> = {}) => {
      const res = await shop.call(method, path, body, headers);
      if (status !== undefined) expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
      expectDocumentedResponse(method, path, res, 'sales');
      return res;
    };
    const item = { occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity: 2 };
    await check('GET', '/sales/listings', undefined, 200);
    const cart = (await check('POST', '/sales/carts', { items: [item] }, 201)).body.cart;
    await check('GET', `/sales/carts/${cart.id}`, undefined, 200);
    await check('PATCH', `/sales/carts/${cart.id}`, { items: [{ ...item, quantity: 9 }] }, 409);
    await check('PATCH', `/sales/carts/${cart.id}`, { items: [{ ...item, quantity: 'x' }] }, 400);
    await check('PATCH', `/sales/carts/${cart.id}`, { items: [item] }, 200);
    await check('GET', '/sales/carts/crt_unknown', undefined, 404);
    const { order } = (await check('POST', `/sales/carts/${cart.id}/checkout`, { customer: { email: 'doc@open.test' } }, 201)).body;
    await check('POST', `/sales/orders/${order.id}/confirm`, {}, 404);
    await check('POST', `/sales/orders/${order.id}/confirm`, {}, 200, { 'x-channel-key': channel.secret });
    await check('POST', '/sales/customer-auth/magic-link', { email: 'doc@open.test' }, 202);
    await check('POST', '/sales/customer-tokens', { code: 'nope' }, 401);
    const code = await magicLinkCode(app, 'doc@open.test');
    const token = (await check('POST', '/sales/customer-tokens', { code }, 201)).body.customerToken;
    await check('GET', '/sales/me/orders', undefined, 200, { authorization: `Bearer ${token}`, 'x-channel-key': '' });
  });
});
