import { readFileSync } from 'node:fs';
import pg from 'pg';
import { migrateDeploy } from '../src/db/migrate.ts';
import { databaseUrl, PG_ADMIN_URL } from '../test/support/env.ts';

/** A freshly migrated database `name` on the benchmark's PostgreSQL (TEST_PG_ADMIN_URL or the local server). */
export async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = databaseUrl(name);
  await migrateDeploy(url);
  return url;
}

export async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/** Resident memory of a process, in MB (Linux). */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** Samples a process's RSS every 200 ms; `peak()` is the highest seen. */
export function peakRssSampler(pid: () => number) {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid()));
    } catch {
      // the process has gone
    }
  }, 200);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}
