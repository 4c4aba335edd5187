import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding package.json, prisma.config.ts, prisma/ and .tools/: the nearest one above
 * this module, which sits in src/ when run from the sources and in dist/src/ when built.
 */
function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const REPO_ROOT = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
