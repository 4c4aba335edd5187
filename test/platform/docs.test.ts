import { parse, validate } from 'graphql';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicSchema as schema } from '../../schema/index.ts';
import { GRAPHIQL_EXAMPLES } from '../../src/graphql/graphiql-examples.ts';
import { useTestApp } from '../support/app.ts';
import { launchBrowser } from '../support/browser.ts';

const app = useTestApp();
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** Loads `path` in Chromium with the network limited to the API (the page must work offline) and answers its text. */
async function render(path: string, ready: string, minimum: number, shows?: string) {
  // Tall enough that GraphiQL's editor (Monaco draws only the lines in view) shows every example.
  const context = await browser.newContext({ viewport: { width: 1400, height: 3000 } });
  const outside: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(app().url)) return route.continue();
    outside.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  try {
    await page.goto(`${app().url}${path}`);
    await page.waitForFunction(([selector, n]) => document.querySelectorAll(selector as string).length >= (n as number), [ready, minimum], {
      timeout: 30_000,
    });
    if (shows) await page.waitForFunction((text) => document.body.innerText.includes(text), shows, { timeout: 30_000 });
    return { text: await page.innerText('body'), url: page.url(), outside, problems };
  } finally {
    await context.close();
  }
}

describe('API reference pages', { timeout: 90_000 }, () => {
  it('/v1/docs renders every /v1 operation from the OpenAPI document, from our own assets only', async () => {
    const document = (await (await fetch(`${app().url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(document.paths).reduce((n, path) => n + Object.keys(path).length, 0);
    const page = await render('/v1/docs', '.opblock', operations);
    expect(page.url).toBe(`${app().url}/v1/docs/`);
    expect(page.text).toContain('/events/{id}');
    expect(page.text).toContain('/webhook-endpoints/{id}/rotate-secret');
    expect(page.outside).toEqual([]);
    expect(page.problems).toEqual([]);
  });

  it('/live/docs renders the sales API', async () => {
    const page = await render('/live/docs/', '.opblock', 5);
    expect(page.text).toContain('/sales/listings');
    expect(page.text).toContain('/sales/carts/{id}/checkout');
    expect(page.outside).toEqual([]);
    expect(page.problems).toEqual([]);
  });

  it('serves the page with a CSP that forbids inline scripts, and only the renderer files it names', async () => {
    const res = await fetch(`${app().url}/v1/docs/`);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${app().url}/v1/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
    expect((await fetch(`${app().url}/v1/docs/assets/package.json`)).status).toBe(404);
    expect((await fetch(`${app().url}/v1/docs/assets/..%2Fpackage.json`)).status).toBe(404);
  });
});

describe('GraphiQL', { timeout: 90_000 }, () => {
  it('opens with the example operations and the auth headers explained', async () => {
    const page = await render('/graphql', '.view-lines', 1, 'CheckoutSalesCart');
    for (const name of ['ListEvents', 'CreateEvent', 'SalesListings', 'CheckoutSalesCart', 'X-Service-Org']) {
      expect(page.text).toContain(name);
    }
  });

  it('the examples are valid operations of the schema (they stay true as it changes)', () => {
    expect(validate(schema, parse(GRAPHIQL_EXAMPLES)).map((error) => error.message)).toEqual([]);
  });
});
