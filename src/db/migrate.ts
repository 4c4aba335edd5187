import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { REPO_ROOT } from '../package-root.ts';

const require = createRequire(import.meta.url);
export { REPO_ROOT };

/**
 * Runs the real Prisma CLI (with the repo's prisma.config.ts, which points it at the offline
 * schema engine in prisma/engine/). Output goes to stderr so that stdout stays machine-readable.
 */
export function runPrisma(args: string[], databaseUrl: string): Promise<void> {
  const cli = require.resolve('prisma/build/index.js');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
      stdio: ['ignore', process.stderr, process.stderr],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`prisma ${args.join(' ')} exited with code ${code}`))));
  });
}

/** Applies every pending migration (prisma migrate deploy). */
export function migrateDeploy(databaseUrl: string): Promise<void> {
  return runPrisma(['migrate', 'deploy'], databaseUrl);
}
