import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../support/browser.ts';

/**
 * Proves the browser harness itself on a stand-in card form served by node:http, so a failure here
 * points at Chromium or playwright-core rather than at the hosted checkout page.
 */

let server: Server;
let url: string;
let browser: Browser | undefined;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Card form stand-in</title></head><body>${body}</body></html>`;
}

beforeAll(async () => {
  // eslint-disable-next-line @typescript-eslint/no-misused-promises -- a test page server: a failure fails the test's page load
  server = createServer(async (req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    if (req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const cardNumber = new URLSearchParams(raw).get('cardNumber') ?? '';
      res.end(page(`<p id="result">Received card ${escapeHtml(cardNumber)}</p>`));
      return;
    }
    res.end(
      page(`<form method="post" action="/">
  <label>Card number <input name="cardNumber" autocomplete="cc-number"></label>
  <button type="submit">Pay</button>
</form>`),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('browser harness', () => {
  it('fills and submits a form in real Chromium and reads the answer page', { timeout: 60_000 }, async () => {
    const context = await browser!.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(url);
      await tab.getByLabel('Card number').fill('4242 4242 4242 4242');
      await tab.getByRole('button', { name: 'Pay' }).click();
      // The locator waits for the answer page: the form page has no #result.
      expect(await tab.locator('#result').textContent()).toBe('Received card 4242 4242 4242 4242');
    } finally {
      await context.close();
    }
  });
});
