// The embedded Temporal: `temporal server start-dev` from the CLI binary that
// scripts/ensure-temporal.sh puts in .tools/temporal/ (no Temporal server comes from npm or
// Debian, and the SDK's own download fails offline). Used when TEMPORAL_ADDRESS is unset, and by
// the tests.
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { REPO_ROOT } from '../package-root.ts';
import { ensureSearchAttributes, SEARCH_ATTRIBUTE_NAMES } from '../webhooks/starts.ts';
import { eachLine, watchChild, watchdogArgs } from './watchdog.ts';

type EmbeddedLog = (msg: string) => void;

export const ENSURE_TEMPORAL_HINT = 'run `bash scripts/ensure-temporal.sh` to download it into .tools/temporal/';

/**
 * The embedded dev server accepts search attribute values of up to 16 KB, so a batch of
 * EMBEDDED_WEBHOOK_BATCH_SIZE deliveries keeps its delivery ids (about 29 bytes each) searchable;
 * `npm start` runs its service with that batch size (WEBHOOK_BATCH_SIZE, src/config.ts), as docker
 * compose does with its Temporal's deploy/temporal-dynamic-config.yaml.
 */
export const EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT = 16_384;
export const EMBEDDED_WEBHOOK_BATCH_SIZE = 256;

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface FindTemporalCliOptions {
  /** The TEMPORAL_CLI_PATH setting. When given it must be an executable: no silent fallback. */
  cliPath?: string | undefined;
  /** Where to look for .tools/temporal/temporal; defaults to this repository. */
  repoRoot?: string;
  /** The PATH to search last; defaults to the process's PATH. */
  searchPath?: string | undefined;
}

/**
 * The `temporal` CLI to run: TEMPORAL_CLI_PATH, else .tools/temporal/temporal in the repository,
 * else `temporal` on PATH; undefined when there is none.
 */
export async function findTemporalCli(opts: FindTemporalCliOptions = {}): Promise<string | undefined> {
  if (opts.cliPath) {
    const configured = path.resolve(opts.cliPath);
    if (!(await isExecutableFile(configured))) {
      throw new Error(`TEMPORAL_CLI_PATH=${opts.cliPath} is not an executable file`);
    }
    return configured;
  }
  const bundled = path.join(opts.repoRoot ?? REPO_ROOT, '.tools', 'temporal', 'temporal');
  if (await isExecutableFile(bundled)) return bundled;
  const searchPath = opts.searchPath ?? process.env.PATH ?? '';
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'temporal');
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The native time-skipping test server (.tools/temporal/temporal-test-server), for
 * `TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } })`.
 */
export async function findTemporalTestServer(opts: { repoRoot?: string } = {}): Promise<string | undefined> {
  const bundled = path.join(opts.repoRoot ?? REPO_ROOT, '.tools', 'temporal', 'temporal-test-server');
  return (await isExecutableFile(bundled)) ? bundled : undefined;
}

/**
 * A port free now on `host`, for a server that a child process binds moments later. Tried first at
 * random below the ephemeral ranges (Linux 32768-60999, macOS 49152-65535): a port the kernel hands
 * out for port 0 is soon handed out again, to another probe or as the local end of an outgoing
 * connection, and then the child finds it taken (the launcher's tests start servers in parallel).
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await listensOn(host, port).catch(() => false)) return port;
  }
  return listensOn(host, 0).then((port) => {
    if (!port) throw new Error('could not determine a free port');
    return port;
  });
}

/** Listens on `port` (0: any) for a moment; answers the port it got. */
function listensOn(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      server.close(() => resolve(address && typeof address === 'object' ? address.port : 0));
    });
  });
}

export interface TemporalDevServerOptions {
  cliPath: string;
  /** Keeps the server's SQLite file (temporal.sqlite) under this directory; in memory when absent. */
  dataDir?: string | undefined;
  /** Frontend gRPC port; a free one when absent or 0. */
  port?: number | undefined;
  /** Web UI port; a free one when absent or 0; false for no UI. */
  uiPort?: number | false | undefined;
  namespace?: string | undefined;
  /** How long to wait for the frontend to answer gRPC (default 30 s). */
  startTimeoutMs?: number;
  log?: EmbeddedLog | undefined;
}

export interface TemporalDevServer {
  /** host:port of the frontend, for Connection.connect / NativeConnection.connect. */
  address: string;
  uiUrl?: string;
  namespace: string;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const STOP_GRACE_MS = 10_000;
const TAIL_LINES = 40;

/** A port the Temporal dev server needs is taken: said to the operator as it is, with what to do. */
export class TemporalPortInUseError extends Error {
  constructor(what: string, port: number) {
    super(
      `Cannot start the Temporal dev server: ${what} ${HOST}:${port} is already in use (another Temporal server? ` +
        'set TEMPORAL_ADDRESS to use one that runs, or stop whatever holds the port)',
    );
    this.name = 'TemporalPortInUseError';
  }
}

async function assertPortFree(port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new TemporalPortInUseError(what, port)
          : new Error(`Cannot start the Temporal dev server: ${what} ${HOST}:${port} is unusable (${err.message})`),
      ),
    );
    probe.listen(port, HOST, () => probe.close(() => resolve()));
  });
}

export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const log = opts.log ?? (() => {});
  const namespace = opts.namespace ?? 'default';
  // A given port is probed first: otherwise the readiness check below could be answered by
  // whatever server already listens there while ours fails to bind.
  if (opts.port) await assertPortFree(opts.port, 'gRPC port');
  if (opts.uiPort) await assertPortFree(opts.uiPort, 'Web UI port');
  const port = opts.port || (await findFreePort(HOST));
  const uiPort = opts.uiPort === false ? undefined : opts.uiPort || (await findFreePort(HOST));
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000;

  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(port)];
  if (uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (opts.dataDir) {
    await mkdir(opts.dataDir, { recursive: true });
    args.push('--db-filename', path.join(opts.dataDir, 'temporal.sqlite'));
  }
  // "default" always exists; --namespace creates the others at launch.
  if (namespace !== 'default') args.push('--namespace', namespace);
  args.push('--log-level', 'warn');
  // The webhook search attributes operators query (src/webhooks/starts.ts). start-dev registers
  // them only when it creates its database; a kept one (DATA_DIR) gets them after start, below.
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=KeywordList`);
  // Throughput on one machine (measured with `npm run bench:webhooks`): start-dev forces a
  // search-attribute cache refresh on every read (about four extra SQLite reads per workflow; the
  // attributes above are registered before any workflow starts, so the cache is never stale), and
  // spreads each task queue over four partitions, which a single node only pays for. Eager activity
  // execution hands a batch's activity to the worker in the answer to its first workflow task.
  // A search attribute value of up to 16 KB holds the delivery ids of a batch of
  // EMBEDDED_WEBHOOK_BATCH_SIZE (Temporal's default, 2 KB, about 70).
  for (const value of [
    'system.forceSearchAttributesCacheRefreshOnRead=false',
    'matching.numTaskqueueReadPartitions=1',
    'matching.numTaskqueueWritePartitions=1',
    'system.enableActivityEagerExecution=true',
    `frontend.searchAttributesSizeOfValueLimit=${EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT}`,
  ]) {
    args.push('--dynamic-config-value', value);
  }

  // The CLI reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE... as its own client
  // settings; the service's variables of the same names must not leak into the server.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_')));

  const started = Date.now();
  const child = spawn('/bin/sh', watchdogArgs('temporal-dev-server', 'TERM', opts.cliPath, args), {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group, so that the SIGKILL escalation reaches the server behind the shell.
    detached: true,
  });
  const watched = watchChild(child, {
    stopSignal: 'SIGTERM',
    graceMs: STOP_GRACE_MS,
    onKill: () => log(`temporal: dev server did not stop within ${STOP_GRACE_MS} ms of SIGTERM, killing it`),
  });
  const { exited, stop } = watched;

  const tail: string[] = [];
  const collect = (stream: NodeJS.ReadableStream, forward: boolean) =>
    eachLine(stream, tail, TAIL_LINES, (line) => {
      // Shutdown makes the server log a burst of harmless "context canceled" warnings, and every
      // start-dev start warns that its generated cluster id is not a UUID.
      if (forward && !watched.stopping() && !line.includes('Cluster Id in Cluster Metadata config')) log(`temporal: ${line}`);
    });
  collect(child.stdout, false);
  collect(child.stderr, true);

  const address = `${HOST}:${port}`;
  const failure = (why: string) =>
    new Error(
      `Temporal dev server (${opts.cliPath} ${args.join(' ')}) ${why}` +
        (tail.length ? `\n--- server output (last ${tail.length} lines) ---\n${tail.join('\n')}` : ''),
    );

  try {
    await waitUntilServing({ address, namespace, deadline: started + startTimeoutMs, exited, getSpawnError: watched.spawnError, failure });
  } catch (err) {
    await stop();
    throw err;
  }

  const uiUrl = uiPort === undefined ? undefined : `http://${HOST}:${uiPort}`;
  log(
    `temporal: dev server ready at ${address} (namespace ${namespace}, ` +
      `${opts.dataDir ? `data in ${opts.dataDir}` : 'in memory'}${uiUrl ? `, UI ${uiUrl}` : ''}) in ${Date.now() - started} ms`,
  );
  return { address, namespace, stop, ...(uiUrl ? { uiUrl } : {}) };
}

// Ready means a real gRPC round trip works and the namespace answers, not just an open port.
async function waitUntilServing(args: {
  address: string;
  namespace: string;
  deadline: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  getSpawnError: () => Error | undefined;
  failure: (why: string) => Error;
}): Promise<void> {
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void args.exited.then((e) => {
    exit = e;
  });
  const [host = HOST, port = '0'] = args.address.split(':');
  let lastError: unknown;
  let listening = false;
  while (Date.now() < args.deadline) {
    const spawnError = args.getSpawnError();
    if (spawnError) throw args.failure(`could not be started: ${spawnError.message}`);
    if (exit) throw args.failure(`exited before it was ready (code ${exit.code}, signal ${exit.signal})`);
    // gRPC is tried only once the port accepts TCP: a gRPC channel that first meets a closed port
    // backs off for about a second before it tries again.
    if (!listening) {
      listening = await acceptsTcp(host, Number(port));
      if (!listening) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        continue;
      }
    }
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address: args.address, connectTimeout: 1_000 });
      await connection.workflowService.describeNamespace({ namespace: args.namespace });
      await ensureSearchAttributes(connection, args.namespace);
      return;
    } catch (err) {
      lastError = err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await connection?.close().catch(() => {});
    }
  }
  if (!listening) throw args.failure(`did not answer gRPC at ${args.address} within the start timeout (the port never opened)`);
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw args.failure(`did not answer gRPC at ${args.address} within the start timeout (last error: ${reason})`);
}

function acceptsTcp(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
