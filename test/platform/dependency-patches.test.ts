import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';

/**
 * Install patches dependencies (scripts/patch-dependencies.mjs, package.json's postinstall, the
 * Dockerfile's production-dependencies stage); every test that reaches PostgreSQL through Prisma
 * runs the patched runtime. test/platform/build.test.ts checks the same for the runtime image.
 */
describe('patches to dependencies', () => {
  it('are all applied to this installation', () => {
    const check = spawnSync(process.execPath, ['scripts/patch-dependencies.mjs', '--check'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
  });
});
