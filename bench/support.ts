import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { embeddedPassword, embeddedUrl, nativeClusterDir } from '../src/embedded/native-postgres.ts';
import { findFreePort } from '../src/embedded/temporal.ts';
import { spawnProcess, type Spawned } from '../test/support/process.ts';
import { apiMallocEnvFrom } from '../src/malloc-env.ts';
import pg from 'pg';
import { migrateDeploy } from '../src/db/migrate.ts';
import { databaseUrl, PG_ADMIN_URL } from '../test/support/env.ts';

/** Runs `command` to its end and answers what it printed; a failure's message carries its stderr (the outside walks: Go). */
export function outputOf(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

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
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/**
 * A process and its descendants (Linux): the API is one process, or a primary and the
 * API_PROCESSES it forked (BENCH_API_PROCESSES).
 */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function rssOfOne(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Resident memory in MB (Linux) of the largest API process: the target (< 300 MB) is per process. */
export function rssOf(pid: number): number {
  return Math.max(...processTree(pid).map(rssOfOne));
}

/** Samples a process's RSS every 200 ms; `peak()` is the highest seen. */
/**
 * Whether memory read after the first and the last of repeated rounds in one process grew: a leak
 * climbs from round to round; 10% is allowed for the allocator's noise.
 */
export function grewAcrossRounds(firstMb: number, lastMb: number): boolean {
  return lastMb > firstMb * 1.1;
}

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

/**
 * CPU time the whole machine has spent busy so far (user, nice, system, interrupts; not idle, not
 * I/O wait, not what its hypervisor stole), in ms over all cores (Linux /proc/stat; ticks of 10 ms):
 * on a machine the benchmark fills, what a piece of work costs everything that runs on it.
 */
export function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return (user + nice + system + irq + softirq) * 10;
}

/** CPU time a process and its descendants have used so far (user + system), in ms (Linux; clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  let ms = 0;
  for (const one of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${one}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ms += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // gone meanwhile
    }
  }
  return ms;
}

/**
 * How a benchmark starts the API: the compiled build, as production runs it (`npm run bench*`
 * builds first), so figures and memory are production's, not tsx's (its loader thread and
 * transformed sources cost ~100 MB). BENCH_SOURCE=1 runs the TypeScript sources through tsx
 * instead (quicker while profiling changes); BENCH_NODE_ARGS adds node flags such as --cpu-prof.
 */
export function apiArgs(): string[] {
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  return process.env.BENCH_SOURCE === '1' ? [...extra, '--import', 'tsx', 'server/main.ts'] : [...extra, 'dist/server/main.js'];
}

/**
 * The API a benchmark measures, on a free port against `url`: no Temporal (nothing is delivered),
 * warn-level logs, a fixed signing key, DATABASE_POOL_SIZE from BENCH_POOL_SIZE (default 10);
 * `env` adds or overrides variables. Answers once /healthz answers.
 */
export async function startBenchApi(url: string, env: Record<string, string> = {}): Promise<{ api: Spawned; origin: string }> {
  const port = await findFreePort();
  const api = spawnProcess(
    apiArgs(),
    {
      // As the launchers start it (src/malloc-env.ts); BENCH_MALLOC_DEFAULTS=0 leaves glibc's own.
      ...(process.env.BENCH_MALLOC_DEFAULTS === '0' ? {} : apiMallocEnvFrom(process.env)),
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      // As production runs (libraries such as graphql-js skip development-only checks), with what
      // production requires: no SMTP (mail stays in the outbox, where bench reads invitation codes),
      // a generated encryption key, and /metrics on the API port (the benchmark reads the heap there).
      NODE_ENV: 'production',
      MAIL_OUTBOX_ALLOWED: 'true',
      METRICS_ON_API_PORT: 'true',
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'bench', secret: 'b'.repeat(32) }]),
      DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '10',
      API_PROCESSES: process.env.BENCH_API_PROCESSES ?? '1',
      ...env,
    },
    { command: process.execPath },
  );
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${origin}/healthz`);
  } catch (error) {
    await api.stop();
    throw error;
  }
  return { api, origin };
}

/**
 * `npm start` as a newcomer runs it, in a new DATA_DIR, with no DATABASE_URL or TEMPORAL_ADDRESS
 * (whatever this process has): answers once it says it is running, with the embedded database's
 * URL from its log. `stop` stops it as Ctrl+C would and removes the DATA_DIR.
 */
export async function startNpmStart(bench: string, env: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), `${bench}-npm-start-`));
  const port = await findFreePort();
  const spawned = spawnProcess(
    ['start'],
    {
      ...env,
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      DATABASE_URL: undefined,
      TEMPORAL_ADDRESS: undefined,
      NODE_ENV: undefined,
    },
    { command: 'npm' },
  );
  const stop = async () => {
    await spawned.stop('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await spawned.waitFor(/Ticketing service is running/, 300_000);
    const [, kind, serving] = spawned.output().match(/embedded postgres: (PGlite|PostgreSQL \S+) \S+ serving (\S+:\d+)/) ?? [];
    if (!serving) throw new Error(`npm start did not say where its embedded PostgreSQL listens:\n${spawned.output().slice(-2000)}`);
    return {
      spawned,
      origin: `http://127.0.0.1:${port}`,
      databaseUrl: embeddedUrl(Number(serving.split(':').pop()), embeddedPassword(nativeClusterDir(dataDir))),
      /** PGlite: one session for every connection, so no statements prepared under names. */
      pglite: kind === 'PGlite',
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
