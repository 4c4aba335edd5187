import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ConfigError, loadConfig, publicUrl, type Config } from '../src/config.ts';
import { tracesEndpoint } from '../src/tracing.ts';
import { createDatabase } from '../src/db/client.ts';
import { REPO_ROOT } from '../src/db/migrate.ts';
import { startEmbeddedDatabase } from '../src/embedded/database.ts';
import {
  EMBEDDED_WEBHOOK_BATCH_SIZE,
  findTemporalCli,
  startTemporalDevServer,
  TemporalPortInUseError,
  type TemporalDevServer,
} from '../src/embedded/temporal.ts';
import { EmbeddedPortInUseError } from '../src/embedded/pglite.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { CHANNEL_KEY_PREFIXES } from '../src/auth/channel-keys.ts';
import { keyParts, mintKey } from '../src/auth/keys.ts';
import { Supervisor } from './supervisor.ts';
import { withApiMallocEnv } from '../src/malloc-env.ts';
import { newId } from '../src/ids.ts';

/**
 * `npm start`: API + worker, for real. DATABASE_URL and TEMPORAL_ADDRESS are used when set;
 * otherwise embedded defaults start here: PostgreSQL on 127.0.0.1:5433 (its own server, or PGlite:
 * EMBEDDED_POSTGRES) and the Temporal dev server
 * (gRPC 7233, Web UI 8233), both keeping their data under DATA_DIR (default .data/). Migrates,
 * bootstraps a demo organisation on first run, prints the URLs and the demo credentials.
 *
 * However it is asked to stop (SIGTERM or SIGINT to npm or to this process, Ctrl+C, the terminal
 * closing) it stops everything it started: the API drains, the worker shuts down, then the Temporal
 * dev server and the embedded PostgreSQL stop. A child still running CHILD_STOP_GRACE_MS after its
 * SIGTERM is killed, and this process has exited STOP_DEADLINE_MS after the stop began whatever hangs.
 */

const say = (message: string) => process.stderr.write(`start: ${message}\n`);

const CHILD_STOP_GRACE_MS = 15_000;
// Beyond the children's grace, room for the Temporal dev server's own (src/embedded/temporal.ts).
const STOP_DEADLINE_MS = 30_000;

interface DemoCredentials {
  organisation: string;
  email: string;
  password: string;
  /** Publishable key of the demo web shop (absent in DATA_DIRs from before it existed). */
  storefrontKey?: string;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const dataDir = path.resolve(REPO_ROOT, config.DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  const cleanups: Array<() => Promise<void>> = [];
  const supervisor = new Supervisor(say);
  let stopBegan: number | undefined;

  const shutdown = async (why: string, code: number) => {
    if (stopBegan !== undefined) {
      // Ctrl+C reaches this process and npm, which passes it on: the same stop, said once.
      if (Date.now() - stopBegan > 1_000) say(`${why}: still stopping (at most ${STOP_DEADLINE_MS / 1000} s in all)`);
      return;
    }
    stopBegan = Date.now();
    say(`stopping (${why})`);
    // On exit the embedded servers' exit handlers kill the Temporal dev server and free PGlite's lock.
    setTimeout(() => {
      say(`still stopping after ${STOP_DEADLINE_MS / 1000} s: exiting, killing what is left`);
      process.exit(code || 1);
    }, STOP_DEADLINE_MS).unref();
    await supervisor.stop(CHILD_STOP_GRACE_MS);
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => say(String(error)));
    say('stopped');
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal, 0));
  whenParentEnds(() => void shutdown('npm, or the shell that started it, has exited', 0));

  try {
    let databaseUrl = config.DATABASE_URL;
    let onPglite = false;
    let embeddedDescription: string | undefined;
    if (!databaseUrl) {
      const postgres = await startEmbeddedDatabase({ choice: config.EMBEDDED_POSTGRES, dataDir, log: say });
      cleanups.push(() => postgres.stop());
      databaseUrl = postgres.url;
      onPglite = postgres.pglite;
      embeddedDescription = postgres.description;
    }

    let temporalAddress = config.TEMPORAL_ADDRESS;
    let temporalUi: string | undefined;
    if (!temporalAddress) {
      let cliPath = await findTemporalCli({ cliPath: config.TEMPORAL_CLI_PATH });
      if (!cliPath) {
        say('no temporal CLI found (TEMPORAL_CLI_PATH, .tools/temporal, PATH): downloading it');
        const fetched = spawnSync('bash', [path.join(REPO_ROOT, 'scripts', 'ensure-temporal.sh')], {
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        if (fetched.status !== 0) throw new Error('could not download the temporal CLI; set TEMPORAL_CLI_PATH or TEMPORAL_ADDRESS');
        cliPath = await findTemporalCli({});
      }
      const temporal: TemporalDevServer = await startTemporalDevServer({
        cliPath: cliPath!,
        dataDir: path.join(dataDir, 'temporal'),
        port: 7233,
        uiPort: 8233,
        namespace: config.TEMPORAL_NAMESPACE,
        log: say,
      });
      cleanups.push(() => temporal.stop());
      temporalAddress = temporal.address;
      temporalUi = temporal.uiUrl;
    }

    await applyMigrations(databaseUrl);
    const demo = await ensureDemoOrganisation(databaseUrl, dataDir);

    const env = {
      ...process.env,
      ...developmentSecrets(dataDir, config),
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      // Its own Temporal takes batches whose delivery ids exceed a stock server's search attribute limit.
      ...(config.TEMPORAL_ADDRESS ? {} : { WEBHOOK_BATCH_SIZE: process.env.WEBHOOK_BATCH_SIZE ?? String(EMBEDDED_WEBHOOK_BATCH_SIZE) }),
      // PGlite serialises every connection through one session: keep pools small there.
      // Its connections share that session, so a statement prepared under a name on one exists on all.
      ...(onPglite ? { DATABASE_POOL_SIZE: '2', DATABASE_PREPARED_STATEMENTS: 'false' } : {}),
    };
    // node itself with tsx as its loader (not the tsx CLI, which runs node as a second process):
    // the pid supervised is the process serving, so a kill -9 leaves no orphan holding the port.
    // Ctrl+C should not wait for a load balancer that is not there.
    const childEnv: NodeJS.ProcessEnv = { ...env, SHUTDOWN_DRAIN_DELAY: process.env.SHUTDOWN_DRAIN_DELAY ?? '0s' };
    const serve = (name: 'api' | 'worker', entry: string, serveEnv: NodeJS.ProcessEnv) =>
      supervisor.start({
        name,
        command: process.execPath,
        args: ['--import', 'tsx', entry],
        options: { cwd: REPO_ROOT, env: serveEnv, stdio: ['ignore', 'inherit', 'inherit'] },
      });
    serve('api', 'server/main.ts', withApiMallocEnv(childEnv));
    // The worker runs workflows bundled by a process of their own, meanwhile: bundled in the worker,
    // webpack's build stayed in its memory (about 90 MB of its RSS; docs/configuration.md).
    const workflowBundle = config.WORKFLOW_BUNDLE ?? (await buildWorkflowBundle(path.join(dataDir, 'workflows.js'), childEnv, config));
    serve('worker', 'workflows/worker-main.ts', { ...childEnv, WORKFLOW_BUNDLE: workflowBundle });

    const origin = publicUrl(config);
    await waitForReady(`http://127.0.0.1:${config.PORT}/readyz`);
    const lines = [
      '',
      'Ticketing service is running.',
      `  GraphQL (GraphiQL in a browser)  ${origin}/graphql`,
      `  REST compatibility layer         ${origin}/v1  (reference: ${origin}/v1/docs/)`,
      `  Sales API                        ${origin}/live  (reference: ${origin}/live/docs/)`,
      `  Temporal Web UI                  ${temporalUi ?? '(external Temporal: see its own UI)'}`,
      `  Database                         ${embeddedDescription ?? 'DATABASE_URL'}`,
      demo
        ? `  Demo sign-in                     X-Service-Org: ${demo.organisation}  email: ${demo.email}  password: ${demo.password}`
        : '  Demo sign-in                     (demo organisation exists; its credentials are not in DATA_DIR)',
      ...(demo?.storefrontKey
        ? [
            `  Demo storefront key              ${demo.storefrontKey}  (try: curl -H 'X-Channel-Key: ${demo.storefrontKey}' ${origin}/live/sales/listings)`,
          ]
        : []),
      '',
      'Press Ctrl+C to stop.',
      '',
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
  } catch (error) {
    // A condition the operator can act on is said as it is; anything else with its stack, to report.
    const condition = error instanceof ConfigError || error instanceof EmbeddedPortInUseError || error instanceof TemporalPortInUseError;
    say(condition ? error.message : `failed: ${(error as Error).stack ?? String(error)}`);
    await shutdown('it could not start', 1);
  }
}

/**
 * Calls `onEnd` once the process that started this one has ended. npm passes the SIGTERM or SIGINT
 * it receives (from a process manager, a container runtime, `kill`) to its own child only; when
 * that child is the shell of `sh -c` running this script, the shell ends on SIGTERM without passing
 * it on, and npm exits. All that reaches this process then is that its parent is gone.
 * (process.ppid keeps the pid it had at start.)
 */
function whenParentEnds(onEnd: () => void, everyMs = 250): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') return;
      clearInterval(timer);
      onEnd();
    }
  }, everyMs);
  timer.unref();
}

/**
 * `prisma migrate deploy`, saying in one line what it did. Its own output (a banner every run, every
 * migration's name on the first) is shown only when it fails.
 */
async function applyMigrations(databaseUrl: string): Promise<void> {
  const cli = createRequire(import.meta.url).resolve('prisma/build/index.js');
  const { code, output } = await runQuietly([cli, 'migrate', 'deploy'], {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  });
  if (code !== 0) {
    process.stderr.write(output);
    throw new Error(`prisma migrate deploy exited with code ${code}`);
  }
  // The names of the migrations applied, as prisma lists them ("└─ 20261122044611_init/").
  const applied = [...output.matchAll(/└─ (\S+)\/$/gm)].map((match) => match[1]);
  say(applied.length > 0 ? `applied ${applied.length} migration(s), the latest ${applied.at(-1)}` : 'database schema up to date');
}

/**
 * Signing and encryption keys for a machine without configured ones: generated once into
 * DATA_DIR/secrets.json (mode 0600) so tokens and webhook secrets survive restarts.
 */
function developmentSecrets(
  dataDir: string,
  config: { JWT_SIGNING_KEYS?: string | undefined; SECRETS_ENCRYPTION_KEY?: string | undefined },
) {
  const file = path.join(dataDir, 'secrets.json');
  let secrets: { JWT_SIGNING_KEYS: string; SECRETS_ENCRYPTION_KEY: string };
  if (existsSync(file)) {
    secrets = JSON.parse(readFileSync(file, 'utf8')) as typeof secrets;
  } else {
    secrets = {
      JWT_SIGNING_KEYS: JSON.stringify([{ kid: `dev-${randomBytes(4).toString('hex')}`, secret: randomBytes(32).toString('base64url') }]),
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  return {
    JWT_SIGNING_KEYS: config.JWT_SIGNING_KEYS ?? secrets.JWT_SIGNING_KEYS,
    SECRETS_ENCRYPTION_KEY: config.SECRETS_ENCRYPTION_KEY ?? secrets.SECRETS_ENCRYPTION_KEY,
  };
}

/** Bootstraps the demo organisation once; its credentials live in DATA_DIR/demo-credentials.json. */
async function ensureDemoOrganisation(databaseUrl: string, dataDir: string): Promise<DemoCredentials | undefined> {
  const file = path.join(dataDir, 'demo-credentials.json');
  const db = createDatabase({ url: databaseUrl, poolSize: 1 });
  try {
    const kept = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DemoCredentials) : undefined;
    const existing = await db.organisation.findUnique({ where: { slug: 'demo' } });
    if (existing) return kept;
    // The other embedded database of this DATA_DIR (EMBEDDED_POSTGRES) made it: this one's demo
    // organisation signs in the same way, so the credentials printed hold for both.
    const credentials: DemoCredentials = {
      organisation: 'demo',
      email: kept?.email ?? 'admin@demo.test',
      password: kept?.password ?? randomBytes(12).toString('base64url'),
    };
    const { organisation, account } = await bootstrapOrganisation(db, {
      orgSlug: credentials.organisation,
      orgName: 'Demo Tickets',
      email: credentials.email,
      password: credentials.password,
      firstName: 'Demo',
      lastName: 'Admin',
    });
    credentials.storefrontKey = await seedDemoShop(db, organisation.id, account.id, kept?.storefrontKey);
    writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    say('bootstrapped the demo organisation');
    return credentials;
  } finally {
    await db.$disconnect();
  }
}

/**
 * Something to sell, so the sales API can be tried at once: an on-sale event with an occurrence in
 * 30 days and one ticket type, and a web shop selling it whose publishable key is printed.
 */
async function seedDemoShop(
  db: ReturnType<typeof createDatabase>,
  organisationId: string,
  accountId: string,
  keptKey: string | undefined,
): Promise<string> {
  const eventId = newId('event');
  const channelId = newId('salesChannel');
  const { key, keyHash, keyPrefix } = keptKey ? keyParts(keptKey) : mintKey(CHANNEL_KEY_PREFIXES.publishable);
  await db.$transaction(async (tx) => {
    await tx.event.create({
      data: { id: eventId, organisationId, accountId, name: 'Demo concert', status: 'on_sale', timezone: 'Europe/London', tags: ['demo'] },
    });
    await tx.eventOccurrence.create({
      data: {
        id: newId('occurrence'),
        organisationId,
        accountId,
        eventId,
        startsAt: new Date(Date.now() + 30 * 86_400_000),
        timezone: 'Europe/London',
      },
    });
    await tx.ticketType.create({
      data: {
        id: newId('ticketType'),
        organisationId,
        accountId,
        eventId,
        name: 'General admission',
        priceAmount: 2500,
        currency: 'GBP',
        capacity: 200,
        maxPerOrder: 10,
      },
    });
    await tx.salesChannel.create({ data: { id: channelId, organisationId, accountId, name: 'Demo web shop', slug: 'demo-shop' } });
    await tx.channelKey.create({
      data: { id: newId('channelKey'), organisationId, channelId, kind: 'publishable', keyHash, keyPrefix },
    });
  });
  return key;
}

/** `tsx workflows/bundle.ts --out <file>`: the workflow bundle a development worker runs (WORKFLOW_BUNDLE). */
async function buildWorkflowBundle(file: string, env: NodeJS.ProcessEnv, config: Config): Promise<string> {
  const args = ['--import', 'tsx', 'workflows/bundle.ts', '--out', file, ...(tracesEndpoint(config) ? ['--traced'] : [])];
  const { code, output } = await runQuietly(args, env);
  if (code !== 0) throw new Error(`bundling the workflows failed (exit ${code}):\n${output.slice(-4000)}`);
  return file;
}

/** Node on `args` in the repository, its output (stdout and stderr) kept for the caller to show when it fails. */
async function runQuietly(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { code, output };
}

async function waitForReady(url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the API did not become ready at ${url} within ${timeoutMs / 1000} s`);
}

await main();
