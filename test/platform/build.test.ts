import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { findFreePort } from '../../src/embedded/temporal.ts';
import type { WebhookWorkflows } from '../../src/webhooks/workflow-contract.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnProcess, type Spawned } from '../support/process.ts';

/**
 * The path from a clean checkout to production, as CI and the Dockerfile take it, once for the
 * whole file: the repository's files (tracked and not yet committed ones, so the tree under test,
 * not the last commit) in a temporary directory; the committed lockfile's packages, then what
 * install runs after them (postinstall: patching dependencies, generating the Prisma client); the
 * CLI straight after install; `npm run build`; then the
 * Dockerfile's runtime stage: only the files it copies, production dependencies only, and
 * `node dist/...` for migrations, the API and a worker against the real PostgreSQL and Temporal.
 */

const work = mkdtempSync(path.join(tmpdir(), 'tks-build-'));
const checkout = path.join(work, 'checkout');
const runtime = path.join(work, 'runtime');

// The environment of a fresh shell: without what the `npm test` around us set for its own script.
const shellEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_package_|npm_lifecycle_|INIT_CWD$)/.test(name)));

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}, timeout = 300_000) {
  const result = spawnSync(command, args, { cwd, env: { ...shellEnv, ...env }, encoding: 'utf8', timeout });
  return { status: result.status, stdout: result.stdout, output: `${result.stdout}\n${result.stderr}`.slice(-6000) };
}

/** The runtime stage of the Dockerfile: the lines after its last FROM. */
function runtimeStage(): string[] {
  const lines = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const from = lines.findLastIndex((line) => line.startsWith('FROM '));
  return lines.slice(from);
}

let database: TestDatabase;
let empty: TestDatabase;
let connection: Connection;
const processes: Spawned[] = [];
beforeAll(async () => {
  [database, empty] = await Promise.all([createTestDatabase(), createTestDatabase({ empty: true })]);
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await connection?.close();
  await Promise.all([database?.drop(), empty?.drop()]);
  rmSync(work, { recursive: true, force: true });
});

describe('a clean checkout', () => {
  it('installs the committed lockfile, and postinstall patches dependencies and generates the Prisma client', () => {
    const files = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], REPO_ROOT).stdout.split('\0');
    for (const file of files.filter((f) => f && existsSync(path.join(REPO_ROOT, f)))) {
      mkdirSync(path.dirname(path.join(checkout, file)), { recursive: true });
      cpSync(path.join(REPO_ROOT, file), path.join(checkout, file));
    }
    expect(existsSync(path.join(checkout, 'package-lock.json'))).toBe(true);
    expect(existsSync(path.join(checkout, 'src', 'generated'))).toBe(false);

    // The packages are a copy of this installation, which `npm test` made with `npm ci` from a
    // fresh clone (a second `npm ci` here took two minutes of the suite). `npm ci --dry-run`
    // then compares them with the lockfile: it refuses a package.json the lockfile does not
    // satisfy, and lists any package it would add or change; nothing is what a fresh `npm ci`
    // would have left.
    const copied = run('cp', ['-a', path.join(REPO_ROOT, 'node_modules'), path.join(checkout, 'node_modules')], REPO_ROOT);
    expect(copied.status, copied.output).toBe(0);
    rmSync(path.join(checkout, 'node_modules', '.vite'), { recursive: true, force: true });
    const compared = run('npm', ['ci', '--dry-run', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], checkout);
    expect(compared.status, compared.output).toBe(0);
    expect(compared.stdout).toMatch(/^up to date/m);
    // The packages install patches, as published: this installation's are patched already.
    const patched = run('node', ['scripts/patch-dependencies.mjs', '--list'], checkout).stdout.trim().split('\n');
    expect(patched.length).toBeGreaterThan(0);
    for (const spec of patched) {
      const name = spec.slice(0, spec.lastIndexOf('@'));
      const packed = run('npm', ['pack', spec, '--prefer-offline', '--pack-destination', work], checkout);
      expect(packed.status, packed.output).toBe(0);
      const folder = path.join(checkout, 'node_modules', name);
      rmSync(folder, { recursive: true });
      mkdirSync(folder);
      const unpacked = run(
        'tar',
        ['-xzf', path.join(work, packed.stdout.trim().split('\n').at(-1)!), '-C', folder, '--strip-components=1'],
        checkout,
      );
      expect(unpacked.status, unpacked.output).toBe(0);
    }
    expect(run('node', ['scripts/patch-dependencies.mjs', '--check'], checkout).status).toBe(1);
    // Then what npm runs once the packages are in place.
    const postinstall = run('npm', ['run', '--silent', 'postinstall'], checkout);
    expect(postinstall.status, postinstall.output).toBe(0);
    const applied = run('node', ['scripts/patch-dependencies.mjs', '--check'], checkout);
    expect(applied.status, applied.output).toBe(0);
    expect(existsSync(path.join(checkout, 'src', 'generated', 'prisma', 'client.ts'))).toBe(true);
    expect(existsSync(path.join(checkout, 'src', 'generated', 'pothos-types.ts'))).toBe(true);
  }, 300_000);

  it('runs `npm run cli -- help` and `npm run cli -- migrate` right after install, with no separate generate', () => {
    const help = run('npm', ['run', '--silent', 'cli', '--', 'help'], checkout);
    expect(help.status, help.output).toBe(0);
    expect(help.output).toContain('Usage: npm run cli -- <command>');

    const migrate = run('npm', ['run', '--silent', 'cli', '--', 'migrate'], checkout, { DATABASE_URL: database.url }, 120_000);
    expect(migrate.status, migrate.output).toBe(0);
    expect(JSON.parse(migrate.stdout)).toEqual({ migrated: true });
  }, 180_000);

  it('`npm run build` emits the API, worker and CLI entries and the pre-built workflow bundle into dist/', () => {
    const build = run('npm', ['run', 'build'], checkout);
    expect(build.status, build.output).toBe(0);
    for (const entry of ['server/main.js', 'workflows/worker-main.js', 'src/cli/main.js', 'workflows/bundle/workflows.js']) {
      expect(existsSync(path.join(checkout, 'dist', entry)), entry).toBe(true);
    }
    // rewriteRelativeImportExtensions: no import of a .ts file is left in the emitted code.
    const main = readFileSync(path.join(checkout, 'dist', 'server', 'main.js'), 'utf8');
    expect(main).toContain('from "../src/config.js"');
    expect(main).not.toMatch(/from ['"][^'"]+\.ts['"]/);
  }, 300_000);
});

describe("the Dockerfile's runtime stage, built from that checkout", () => {
  const keys = {
    NODE_ENV: 'production',
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'build-test', secret: 'a-secret-of-the-build-test-0123456789' }]),
    SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    MAIL_OUTBOX_ALLOWED: 'true',
    // debug: the bundler's report is logged at debug, so only at this level does its absence show
    // that the worker ran the pre-built bundle.
    LOG_LEVEL: 'debug',
  };
  const taskQueue = `build-test-${Date.now()}`;
  const env = () => ({ ...keys, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: database.url });

  it('copies only package.json, the lockfile, the Prisma configuration and dist/, with production dependencies only', () => {
    const stage = runtimeStage();
    expect(stage[0]).toBe('FROM node:24-bookworm-slim');
    expect(stage).toContain('USER node');
    expect(stage.at(-1)).toBe('CMD ["node", "dist/server/main.js"]');
    const copies = stage.filter((line) => line.startsWith('COPY '));
    expect(copies).toEqual([
      'COPY --from=production-dependencies /app/node_modules ./node_modules',
      'COPY package.json package-lock.json prisma.config.ts ./',
      'COPY prisma ./prisma',
      'COPY --from=build /app/dist ./dist',
    ]);
    mkdirSync(runtime);
    for (const line of copies.filter((c) => !c.startsWith('COPY --from'))) {
      for (const source of line.split(/\s+/).slice(1, -1))
        cpSync(path.join(checkout, source), path.join(runtime, source), { recursive: true });
    }
    cpSync(path.join(checkout, 'dist'), path.join(runtime, 'dist'), { recursive: true });
    // The production-dependencies stage runs `npm ci --omit=dev --ignore-scripts`; pruning the
    // checkout's installation to the same set is that, without a second install.
    expect(readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')).toContain('npm ci --omit=dev --ignore-scripts');
    renameSync(path.join(checkout, 'node_modules'), path.join(runtime, 'node_modules'));
    const prune = run('npm', ['prune', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], runtime);
    expect(prune.status, prune.output).toBe(0);
    for (const devOnly of ['tsx', 'vitest', 'playwright-core', '@temporalio/testing']) {
      expect(existsSync(path.join(runtime, 'node_modules', devOnly)), devOnly).toBe(false);
    }
    // The stage then patches what it installed, as postinstall does elsewhere (scripts/patch-dependencies.mjs).
    expect(readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')).toContain('&& node scripts/patch-dependencies.mjs &&');
    cpSync(path.join(checkout, 'scripts', 'patch-dependencies.mjs'), path.join(runtime, 'scripts', 'patch-dependencies.mjs'));
    for (const args of [[], ['--check']]) {
      const patched = run('node', ['scripts/patch-dependencies.mjs', ...args], runtime);
      expect(patched.status, patched.output).toBe(0);
    }
    rmSync(path.join(runtime, 'scripts'), { recursive: true });
  }, 180_000);

  it('`node dist/src/cli/main.js migrate` migrates an empty database (the Prisma CLI from production dependencies)', () => {
    const migrate = run('node', ['dist/src/cli/main.js', 'migrate'], runtime, { ...env(), DATABASE_URL: empty.url }, 120_000);
    expect(migrate.status, migrate.output).toBe(0);
    expect(JSON.parse(migrate.stdout)).toEqual({ migrated: true });
    expect(migrate.output).toContain('All migrations have been successfully applied');
  }, 180_000);

  it('`node dist/server/main.js` answers /readyz and serves a signed-in request; `node dist/workflows/worker-main.js` runs a workflow', async () => {
    const bootstrap = run(
      'node',
      [
        'dist/src/cli/main.js',
        'bootstrap',
        '--org-slug',
        'built',
        '--org-name',
        'Built',
        '--email',
        'owner@built.test',
        '--password',
        'long enough pw',
      ],
      runtime,
      env(),
    );
    expect(bootstrap.status, bootstrap.output).toBe(0);

    const port = await findFreePort();
    const api = spawnProcess(
      ['dist/server/main.js'],
      { ...env(), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` },
      { command: 'node', cwd: runtime },
    );
    const worker = spawnProcess(['dist/workflows/worker-main.js'], env(), { command: 'node', cwd: runtime });
    processes.push(api, worker);
    await Promise.all([api.waitFor(/API listening/, 60_000), worker.waitFor(/worker running/, 60_000)]);

    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
    const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'built' },
      body: JSON.stringify({ email: 'owner@built.test', password: 'long enough pw' }),
    });
    expect(login.status).toBe(200);
    const { accessToken } = (await login.json()) as { accessToken: string };
    const events = await fetch(`http://127.0.0.1:${port}/v1/events`, {
      headers: { authorization: `Bearer ${accessToken}`, 'x-service-org': 'built' },
    });
    const listed = await events.text();
    expect(events.status, listed).toBe(200);
    expect(JSON.parse(listed)).toMatchObject({ events: [] });

    const client = new Client({ connection });
    // A real workflow of the built bundle whose activity reads the database: recovering an endpoint
    // that has no failed deliveries.
    const since = new Date(0).toISOString();
    const result = await client.workflow.execute<WebhookWorkflows['recoverWebhookEndpoint']>('recoverWebhookEndpoint', {
      taskQueue,
      workflowId: `whr_${taskQueue}`,
      args: [{ organisationId: 'org_none', endpointId: 'whe_none', since, until: new Date().toISOString() }],
    });
    expect(result).toEqual({ attempted: 0, succeeded: 0 });
    // The pre-built bundle from `npm run build`, not bundling at start.
    expect(worker.output()).not.toMatch(/webpack|Workflow bundle created/i);

    expect(await Promise.all([api.stop('SIGTERM'), worker.stop('SIGTERM')])).toEqual([0, 0]);
  }, 180_000);
});
