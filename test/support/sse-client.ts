import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { expect } from 'vitest';
import type { TestApp } from './app.ts';

/**
 * Subscriptions as their clients see them: graphql-sse's own client (the GraphQL-over-SSE protocol),
 * the results of a subscription collected as they arrive, and a raw request read for a while.
 */
export type Result = ExecutionResult<Record<string, any>, unknown>;

export const ORDER_CHANGED = `subscription ($accountId: ID!, $eventId: ID) {
  orderChanged(accountId: $accountId, eventId: $eventId) { resync cursor change committedAt order { id status accountId } }
}`;
export const AUDIT = `subscription ($accountId: ID) {
  auditEntryAdded(accountId: $accountId) { resync cursor entry { action targetId accountId } }
}`;

export function sseClient(app: TestApp, token: string, slug: string, headers: Record<string, string> = {}): Client {
  return createClient({
    url: `${app.url}/graphql`,
    headers: { authorization: `Bearer ${token}`, 'x-service-org': slug, ...headers },
    retryAttempts: 0,
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until `holds` answers true (checked every 50 ms), failing with `what` after `timeoutMs`. */
export async function eventually(what: string, holds: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await holds())) {
    if (Date.now() > until) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(50);
  }
}

/** Results of one subscription, collected as they arrive. */
export function follow(client: Client, query: string, variables: Record<string, unknown>) {
  const results: Result[] = [];
  let done = false;
  let wake: (() => void) | undefined;
  const dispose = client.subscribe<Record<string, any>>(
    { query, variables },
    {
      next: (result) => {
        results.push(result as Result);
        wake?.();
      },
      error: (error) => {
        results.push({ errors: [{ message: String(error) }] } as unknown as Result);
        done = true;
        wake?.();
      },
      complete: () => {
        done = true;
        wake?.();
      },
    },
  );
  return {
    results,
    dispose,
    get done() {
      return done;
    },
    async take(n: number, timeoutMs = 15_000): Promise<Result[]> {
      const until = Date.now() + timeoutMs;
      while (results.length < n && !done && Date.now() < until) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 100);
        });
      }
      expect(results.length, JSON.stringify(results)).toBeGreaterThanOrEqual(n);
      return results.slice(0, n);
    },
    async ended(timeoutMs = 15_000): Promise<void> {
      const until = Date.now() + timeoutMs;
      while (!done && Date.now() < until) await sleep(100);
      expect(done, JSON.stringify(results)).toBe(true);
    },
  };
}

/** A raw SSE request with fetch: status, headers and the text received within `ms` (or until the stream ends). */
export async function rawSse(
  url: string,
  init: { method?: string; headers: Record<string, string>; body?: unknown },
  ms = 1_500,
): Promise<{ status: number; headers: Headers; text: string }> {
  const controller = new AbortController();
  const res = await fetch(url, {
    method: init.method ?? 'POST',
    headers: { accept: 'text/event-stream', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: controller.signal,
  });
  let text = '';
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // aborted after `ms`
  } finally {
    clearTimeout(timer);
  }
  return { status: res.status, headers: res.headers, text };
}
