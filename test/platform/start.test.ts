import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-sse';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { nativePostgresBinaries } from '../../src/embedded/native-postgres.ts';
import { EMBEDDED_WEBHOOK_BATCH_SIZE, findFreePort } from '../../src/embedded/temporal.ts';

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The ports `npm start` serves on besides the API's: Temporal gRPC and Web UI, the embedded PostgreSQL. */
const EMBEDDED_PORTS = [7233, 8233, 5433];

interface NpmStart {
  npm: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>;
}

/**
 * `npm start` as a user types it in a terminal: its own process group (a shell's job), nothing
 * configured but DATA_DIR and PORT, the default log level.
 */
function npmStart(dataDir: string, port: number, extra: Record<string, string> = {}): NpmStart {
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dataDir, PORT: String(port), ...extra };
  for (const name of [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'JWT_SIGNING_KEYS',
    'SECRETS_ENCRYPTION_KEY',
    'LOG_LEVEL',
    'NODE_ENV',
    'PUBLIC_URL',
  ]) {
    delete env[name];
  }
  const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  npm.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  npm.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return {
    npm,
    output: () => output,
    waitFor: (pattern, timeoutMs) =>
      waitUntil(
        () => {
          if (pattern.test(output)) return true;
          if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm exited before ${pattern}`);
          return false;
        },
        timeoutMs,
        `${pattern} in the output`,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; output so far:\n${output.slice(-4000)}`);
      }),
  };
}

interface ProcessRow {
  pid: number;
  ppid: number;
  state: string;
  args: string;
}

function processTable(): ProcessRow[] {
  return execFileSync('ps', ['-A', '-o', 'pid=,ppid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/))
    .filter((match) => match !== null)
    .map(([, pid, ppid, state, args]) => ({ pid: Number(pid), ppid: Number(ppid), state: state!, args: args! }));
}

/** `root` and every process below it, now. */
function processTree(root: number): ProcessRow[] {
  const table = processTable();
  const tree = table.filter((row) => row.pid === root);
  for (let i = 0; i < tree.length; i += 1) tree.push(...table.filter((row) => row.ppid === tree[i]!.pid));
  return tree;
}

/** Those of `pids` still running (a zombie has exited; only its parent has not collected it yet). */
function stillRunning(pids: number[]): ProcessRow[] {
  return processTable().filter((row) => pids.includes(row.pid) && !row.state.startsWith('Z'));
}

function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Every process `npm start` ran, from npm down to the Temporal dev server, has exited and no port is held. */
async function expectEverythingStopped(pids: number[], ports: number[], withinMs: number): Promise<void> {
  const heldPorts = async () => (await Promise.all(ports.map(async (port) => ((await acceptsConnections(port)) ? [port] : [])))).flat();
  try {
    await waitUntil(async () => stillRunning(pids).length === 0 && (await heldPorts()).length === 0, withinMs, 'everything stopped');
  } catch {
    const left = stillRunning(pids).map((row) => `${row.pid} ${row.args.slice(0, 160)}`);
    expect({ running: left, heldPorts: await heldPorts() }).toEqual({ running: [], heldPorts: [] });
  }
}

/**
 * The README's first command with nothing configured: the embedded PostgreSQL (its own server where
 * this platform's binaries are installed, as on the CI machines; PGlite once, on request) and Temporal dev server,
 * migrations, the demo organisation, the API and a worker. (It uses the fixed embedded ports
 * 5433, 7233 and 8233, so it fails, saying so, while another `npm start` runs on this machine.)
 */
describe('npm start with the embedded defaults', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tks-start-'));
  // What a test started is killed after it, by pid, if its stop did not end it: the next test
  // needs the same ports and the same DATA_DIR.
  let started: NpmStart | undefined;
  const recorded = new Set<number>();
  const recordTree = (root: number) => {
    const pids = processTree(root).map((row) => row.pid);
    for (const pid of pids) recorded.add(pid);
    return pids;
  };
  afterEach(async () => {
    if (started?.npm.exitCode === null && started.npm.signalCode === null) recordTree(started.npm.pid!);
    started = undefined;
    for (const row of stillRunning([...recorded])) {
      try {
        process.kill(row.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await waitUntil(() => stillRunning([...recorded]).length === 0, 10_000, 'what the test left running killed');
    recorded.clear();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  // A process manager, a container runtime or `kill` signals npm alone, not its process group.
  it('on a fresh DATA_DIR: starts everything, reads well, serves requests, survives crashes, and stops on SIGTERM to npm', async () => {
    const port = await findFreePort();
    const run = npmStart(dataDir, port);
    started = run;
    const origin = `http://localhost:${port}`;
    await run.waitFor(/Press Ctrl\+C to stop/, 150_000);
    // The first seconds after it says it runs belong to the first impression too.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const firstOutput = run.output();

    // Each condition once, no build chatter, no stack traces: what a newcomer reads first. (Soft:
    // the rest of the test still runs.)
    const lines = firstOutput.split('\n');
    expect.soft(firstOutput).not.toMatch(/^\s+at \S.*:\d+:\d+\)?$/m);
    expect.soft(firstOutput).not.toMatch(/\\n\s+at \S/);
    // A log line of its own stays short; webpack's report of the workflow bundle was about 1,200.
    expect.soft(lines.filter((line) => line.length > 1_000)).toEqual([]);
    const said = lines.flatMap((line) => {
      if (!line.trim()) return [];
      if (!line.startsWith('{')) return [line];
      const entry = JSON.parse(line) as { component?: string; msg?: string };
      // Request lines are one per request, not a condition.
      return entry.msg === 'request' ? [] : [`${entry.component}: ${entry.msg}`];
    });
    expect.soft(said.filter((line, index) => said.indexOf(line) !== index)).toEqual([]);
    // Change notices arrive, so the API's caches are on.
    expect.soft(firstOutput).not.toMatch(/change notices (still )?unavailable/);
    // PostgreSQL's own server where this platform has its binaries (Linux and macOS, x64 and arm64).
    if (nativePostgresBinaries()) expect(firstOutput).toMatch(/Database\s+embedded PostgreSQL in \S+postgresql$/m);

    expect(firstOutput).toContain(`GraphQL (GraphiQL in a browser)  ${origin}/graphql`);
    expect(firstOutput).toContain(`REST compatibility layer         ${origin}/v1  (reference: ${origin}/v1/docs/)`);
    expect(firstOutput).toMatch(/Temporal Web UI\s+http:\/\/127\.0\.0\.1:8233/);
    const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    expect(firstOutput).toContain(`password: ${demo.password}`);

    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
    const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'demo' },
      body: JSON.stringify({ email: demo.email, password: demo.password }),
    });
    expect(login.status).toBe(200);
    // Subscriptions stream on the embedded database too: its connections deliver LISTEN/NOTIFY.
    const { accessToken } = (await login.json()) as { accessToken: string };
    const client = createClient({
      url: `${origin}/graphql`,
      headers: { authorization: `Bearer ${accessToken}`, 'x-service-org': 'demo' },
      retryAttempts: 0,
    });
    const added: unknown[] = [];
    const dispose = client.subscribe(
      { query: 'subscription { auditEntryAdded { entry { action targetId } } }' },
      { next: (result) => void added.push(result), error: (error) => void added.push({ error: String(error) }), complete: () => undefined },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const key = await fetch(`${origin}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'demo', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ name: 'streamed', scopes: ['events.read'] }),
    });
    expect(key.status).toBe(201);
    const { apiKey } = (await key.json()) as { apiKey: { id: string } };
    await waitUntil(() => added.length > 0, 15_000, 'the audit entry streamed');
    dispose();
    expect(added[0]).toEqual({ data: { auditEntryAdded: { entry: { action: 'api_key.created', targetId: apiKey.id } } } });
    // The demo shop sells something at once, with the key printed.
    expect(firstOutput).toContain(`Demo storefront key              ${demo.storefrontKey}`);
    const listings = await fetch(`http://127.0.0.1:${port}/live/sales/listings`, { headers: { 'x-channel-key': demo.storefrontKey } });
    expect(listings.status).toBe(200);
    const listed = (await listings.json()) as {
      events: Array<{ name: string; ticketTypes: Array<{ onSale: boolean }>; occurrences: unknown[] }>;
    };
    expect(listed.events).toMatchObject([{ name: 'Demo concert', ticketTypes: [{ onSale: true }] }]);
    expect(listed.events[0]!.occurrences).toHaveLength(1);
    const ui = await fetch('http://127.0.0.1:8233/');
    expect(ui.status).toBe(200);

    // Crashes are survived, not spread: a killed worker is restarted while the API keeps answering,
    // and a killed API is restarted while the worker keeps running.
    const pidOf = (name: string) => Number([...run.output().matchAll(new RegExp(`${name} started \\(pid (\\d+)\\)`, 'g'))].at(-1)![1]);
    // Running first, so that the count of "worker running" below tells the restarted one apart.
    await run.waitFor(/"msg":"worker running"/, 60_000);
    const worker = pidOf('worker');
    // Its own Temporal takes webhook batches of 256, each delivery id still searchable (webhook-search-attributes.test.ts).
    for (const pid of [pidOf('api'), worker]) {
      const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      expect(environment).toContain(`WEBHOOK_BATCH_SIZE=${EMBEDDED_WEBHOOK_BATCH_SIZE}`);
      // The worker runs the workflows a process of their own bundled (worker.test.ts: without bundling at start).
      if (pid === worker) expect(environment).toContain(`WORKFLOW_BUNDLE=${path.join(dataDir, 'workflows.js')}`);
    }
    expect(existsSync(path.join(dataDir, 'workflows.js'))).toBe(true);
    process.kill(worker, 'SIGKILL');
    await run.waitFor(/worker exited \(SIGKILL\); restarting in 1 s/, 10_000);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    await waitUntil(() => pidOf('worker') !== worker, 30_000);
    const api = pidOf('api');
    const restartedWorker = pidOf('worker');
    process.kill(api, 'SIGKILL');
    await run.waitFor(/api exited \(SIGKILL\); restarting in 1 s/, 10_000);
    await waitUntil(
      async () =>
        pidOf('api') !== api &&
        (await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        )),
      60_000,
    );
    expect(() => process.kill(restartedWorker, 0)).not.toThrow();
    await waitUntil(() => run.output().split('"msg":"worker running"').length > 2, 30_000, 'the restarted worker running');

    expect.soft(run.output()).not.toMatch(/change notices (still )?unavailable/);

    const pids = recordTree(run.npm.pid!);
    run.npm.kill('SIGTERM');
    await expectEverythingStopped(pids, [port, ...EMBEDDED_PORTS], 35_000);
    // Stopped, not killed: the API drained, the worker shut down, the launcher finished its stop.
    expect(run.output()).toContain('shutting down: not ready, finishing requests');
    expect(run.output()).toContain('"msg":"worker stopped"');
    expect(run.output()).toMatch(/^start: stopped$/m);
  }, 360_000);

  it.each([
    ['SIGINT to npm', (npm: ChildProcess) => npm.kill('SIGINT')],
    ['Ctrl+C in its terminal (SIGINT to the process group)', (npm: ChildProcess) => process.kill(-npm.pid!, 'SIGINT')],
    [
      'SIGTERM to the launcher (scripts/start.ts), on the embedded PGlite (EMBEDDED_POSTGRES=pglite)',
      (npm: ChildProcess) => process.kill(processTree(npm.pid!).find((row) => row.args.includes('scripts/start.ts'))!.pid, 'SIGTERM'),
      { EMBEDDED_POSTGRES: 'pglite' },
    ],
  ] as Array<[string, (npm: ChildProcess) => void, Record<string, string>?]>)(
    'stops everything it started on %s',
    async (_how, stop, env = {}) => {
      const port = await findFreePort();
      const demoBefore = readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8');
      const run = npmStart(dataDir, port, env);
      started = run;
      await run.waitFor(/Press Ctrl\+C to stop/, 120_000);
      if (env.EMBEDDED_POSTGRES === 'pglite') {
        expect(run.output()).toMatch(/Database\s+embedded PGlite in \S+postgres$/m);
        // A second embedded database in the DATA_DIR (the first test ran PostgreSQL's own server where
        // it can): its demo organisation signs in with the credentials DATA_DIR keeps, and sells under its key.
        expect(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')).toBe(demoBefore);
        const demo = JSON.parse(demoBefore) as { email: string; password: string; storefrontKey: string };
        const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-org': 'demo' },
          body: JSON.stringify({ email: demo.email, password: demo.password }),
        });
        expect(login.status).toBe(200);
        const listings = await fetch(`http://127.0.0.1:${port}/live/sales/listings`, { headers: { 'x-channel-key': demo.storefrontKey } });
        expect(listings.status).toBe(200);
      }
      await run.waitFor(/"msg":"worker running"/, 30_000);
      const pids = recordTree(run.npm.pid!);
      expect(pids.length).toBeGreaterThanOrEqual(6);
      stop(run.npm);
      await expectEverythingStopped(pids, [port, ...EMBEDDED_PORTS], 35_000);
      expect(run.output()).toContain('"msg":"worker stopped"');
      expect(run.output()).toMatch(/^start: stopped$/m);
    },
    180_000,
  );
});
