#!/usr/bin/env node
// Stand-in for Prisma's native `schema-engine` binary, which the CLI cannot download on
// machines without internet access. prisma.config.ts points PRISMA_SCHEMA_ENGINE_BINARY here;
// the CLI then talks to this program exactly as it talks to the native engine, and the work
// is done by @prisma/schema-engine-wasm over @prisma/adapter-pg. See README.md next to this file.
//
// stdout is the JSON-RPC channel: nothing but RPC messages may be written to it.
// stderr carries JSON log lines in the native engine's shape ({level, fields: {message}}),
// which the CLI parses to build its error messages.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const require = createRequire(import.meta.url);
const WASM_PACKAGE = '@prisma/schema-engine-wasm';

// Temporary shadow databases are named like the native engine's.
const SHADOW_DB_PREFIX = 'prisma_migrate_shadow_db_';

// PostgreSQL's one-byte `"char"` type (pg_constraint.contype, pg_class.relkind,
// pg_attribute.attidentity, ...) is unknown to @prisma/adapter-pg, which then fails the engine's
// catalogue queries ("Column type 'char' could not be deserialized"). Reported as text, the
// engine panics while describing CHECK constraints (it reads contype as a char), so the columns
// are handed over as ColumnTypeEnum.Character.
const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;

// ---------------------------------------------------------------------------------------------
// Logging (stderr only) and secrets

/** Removes credentials from anything that may have picked up a connection string. */
function redact(text) {
  return String(text).replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s:]*)(?::[^/@\s]*)?@/gi, '$1$2:***@');
}

function log(level, message, fields = {}) {
  const line = {
    timestamp: new Date().toISOString(),
    level,
    fields: { message: redact(message), ...fields },
    target: 'schema_engine::logger',
  };
  process.stderr.write(`${JSON.stringify(line)}\n`);
}

// Node's own warnings (e.g. from pg) would be printed as plain text on stderr, which the CLI
// then fails to parse as engine output.
process.removeAllListeners('warning');
process.on('warning', (warning) => log('WARN', `${warning.name}: ${warning.message}`));

/** An error the CLI shows to the user as-is, with a Prisma error code when there is one. */
class UserFacingError extends Error {
  constructor(errorCode, message, meta = {}) {
    super(message);
    this.errorCode = errorCode;
    this.meta = meta;
  }
}

// ---------------------------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const args = { datamodels: [], datasource: undefined, cli: undefined, version: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--version' || arg === '-V') {
      args.version = true;
    } else if (arg === '--datamodels') {
      while (i + 1 < argv.length && !argv[i + 1].startsWith('--') && argv[i + 1] !== 'cli') {
        args.datamodels.push(argv[++i]);
      }
    } else if (arg === '--datasource') {
      try {
        args.datasource = JSON.parse(argv[++i] ?? 'null') ?? undefined;
      } catch {
        // JSON.parse quotes the input in its message, and the input holds the password.
        throw new UserFacingError(undefined, 'Invalid JSON in --datasource.');
      }
    } else if (arg === '--enabled-preview-features' || arg === '--extension-types') {
      i++; // accepted for compatibility; the Wasm engine reads preview features from the schema
    } else if (arg === 'cli') {
      args.cli = argv[++i];
    } else {
      throw new UserFacingError(undefined, `Unknown argument: ${arg}`);
    }
  }
  return args;
}

function engineVersion() {
  const packageDir = dirname(require.resolve(WASM_PACKAGE)); // package.json is not exported
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  // 7.10.0-4.<engines commit>: the CLI compares the commit with the one it was built for.
  return `schema-engine-cli ${version.slice(version.lastIndexOf('.') + 1)}`;
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL connections

let pgModule;
function pg() {
  pgModule ??= require('pg');
  return pgModule;
}

/**
 * Turns a Prisma PostgreSQL URL into a pg config WITHOUT `connectionString`: pg lets
 * `connectionString` win over `database`, so a config derived with `{...config, database}`
 * (how a shadow database is reached) would silently connect to the main database.
 */
function targetFromUrl(url) {
  if (typeof url !== 'string' || url === '') {
    throw new UserFacingError('P1012', 'No database URL: set `datasource.url` in prisma.config.ts (DATABASE_URL).');
  }
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new UserFacingError('P1013', 'The provided database string is invalid. This schema engine only supports postgresql:// URLs.');
  }
  const pgRequire = createRequire(require.resolve('pg'));
  const { parse } = pgRequire('pg-connection-string');
  const parsed = parse(url, { useLibpqCompat: true });
  const connectTimeoutSeconds = Number(parsed.connect_timeout ?? 5);
  const schema = parsed.schema || 'public';
  // Migration scripts use unqualified names: like the native engine, work inside `?schema=`.
  const searchPath = `-c search_path=${quoteIdent(schema).replaceAll(' ', '\\ ')}`;
  const config = {
    host: parsed.host || 'localhost',
    port: parsed.port ? Number(parsed.port) : 5432,
    user: parsed.user || undefined,
    password: parsed.password || undefined,
    database: parsed.database || parsed.user || undefined,
    ssl: parsed.ssl,
    application_name: parsed.application_name ?? 'prisma-schema-engine-wasm',
    options: parsed.options ? `${parsed.options} ${searchPath}` : searchPath,
    connectionTimeoutMillis: connectTimeoutSeconds > 0 ? connectTimeoutSeconds * 1000 : 0,
  };
  if (parsed.sslaccept === 'accept_invalid_certs' && typeof config.ssl === 'object') {
    config.ssl.rejectUnauthorized = false;
  }
  return { config, schema };
}

function describeServer(config) {
  return `${config.host}:${config.port}`;
}

function quoteIdent(name) {
  return `"${String(name).replaceAll('"', '""')}"`;
}

/** Maps connection failures to the codes and messages of the native engine. */
function connectionError(error, config) {
  const server = describeServer(config);
  const where = { database_host: config.host, database_port: config.port };
  switch (error?.code) {
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return new UserFacingError(
        'P1001',
        `Can't reach database server at \`${server}\`\n\nPlease make sure your database server is running at \`${server}\`.`,
        where,
      );
    case '3D000':
      return new UserFacingError('P1003', `Database \`${config.database}\` does not exist on the database server at \`${server}\`.`, {
        ...where,
        database_name: config.database,
      });
    case '28P01':
      return new UserFacingError(
        'P1000',
        `Authentication failed against database server at \`${server}\`, the provided database credentials for \`${config.user}\` are not valid.\n\nPlease make sure to provide valid database credentials for the database server at \`${server}\`.`,
        { ...where, database_user: config.user },
      );
    case '28000':
    case '42501':
      return new UserFacingError('P1010', `User \`${config.user}\` was denied access on the database \`${config.database}\``, {
        database_user: config.user,
        database_name: config.database,
      });
    default:
      if (/timeout/i.test(error?.message ?? '')) {
        return new UserFacingError('P1001', `Can't reach database server at \`${server}\` (timed out).`, where);
      }
      return error;
  }
}

/** Runs `fn` with a short-lived client; used by the `cli` sub-commands and `dbExecute`. */
async function withClient(config, fn) {
  const client = new (pg().Client)(config);
  try {
    await client.connect();
  } catch (error) {
    throw connectionError(error, config);
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A connection to the server's maintenance database, for CREATE/DROP DATABASE. */
async function withAdminClient(config, fn) {
  let lastError;
  for (const database of ['postgres', 'template1']) {
    try {
      return await withClient({ ...config, database }, fn);
    } catch (error) {
      if (error instanceof UserFacingError && error.errorCode === 'P1003') {
        lastError = error;
        continue;
      }
      throw error;
    }
  }
  throw lastError;
}

async function createDatabase(url) {
  const { config } = targetFromUrl(url);
  await withAdminClient(config, async (client) => {
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(config.database)}`);
    } catch (error) {
      if (error.code !== '42P04') throw error; // already exists: nothing to do
    }
  });
  return config.database;
}

async function dropDatabase(url) {
  const { config } = targetFromUrl(url);
  await withAdminClient(config, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdent(config.database)}`));
}

async function canConnect(url) {
  const { config } = targetFromUrl(url);
  await withClient(config, (client) => client.query('SELECT 1'));
}

/**
 * Runs a whole SQL script as ONE simple-protocol query on one connection. PostgreSQL then runs
 * it as a single implicit transaction: `$$`-quoted function bodies reach the server intact, and
 * a failing statement rolls back everything before it. (adapter-pg's executeScript splits on
 * `;`, which breaks both.)
 */
async function runScript(queryable, script) {
  await queryable.query(script);
}

function sqlErrorMessage(error) {
  if (!error?.code || !error?.severity) return error?.message ?? String(error);
  const parts = [`${error.severity}: ${error.message}`];
  if (error.detail) parts.push(`DETAIL: ${error.detail}`);
  if (error.hint) parts.push(`HINT: ${error.hint}`);
  if (error.position) parts.push(`POSITION: ${error.position}`);
  return parts.join('\n');
}

/**
 * The Wasm engine reports a failed migration script as a bare connector error; the native
 * engine reports P3018 with the database's error, which is what users know how to act on.
 */
function migrationFailure(error, scriptError) {
  const migrationName = /apply_script\s+with migration_name="([^"]+)"/.exec(error?.message ?? '')?.[1];
  if (!migrationName || !scriptError || error?.code) return error;
  return new UserFacingError(
    'P3018',
    'A migration failed to apply. New migrations cannot be applied before the error is recovered from. ' +
      'Read more about how to resolve migration issues in a production database: https://pris.ly/d/migrate-resolve' +
      `\n\nMigration name: ${migrationName}\n\nDatabase error code: ${scriptError.code}\n\nDatabase error:\n${sqlErrorMessage(scriptError)}\n`,
    { migration_name: migrationName, database_error_code: scriptError.code, database_error: scriptError.message },
  );
}

// ---------------------------------------------------------------------------------------------
// Driver adapter factory handed to the Wasm engine

/**
 * Opens a PrismaPg adapter on exactly one session (a pool of one), as the native engine does.
 * The engine keeps state in its session: `pg_advisory_lock(72707369)` is session-level and held
 * until the session ends. Over a pool the lock would sit on one connection while the migrations
 * run on others, and a second acquisition on another connection would wait for the engine's own
 * lock until it times out.
 */
async function openSingleSessionAdapter({ config, schema }) {
  const [{ PrismaPg }, { ColumnTypeEnum }] = await Promise.all([import('@prisma/adapter-pg'), import('@prisma/driver-adapter-utils')]);
  const pool = new (pg().Pool)({ ...config, max: 1, idleTimeoutMillis: 0 });
  pool.on('error', (error) => log('WARN', `idle connection error: ${error.message}`));
  const factory = new PrismaPg(pool, { schema, disposeExternalPool: true });
  let adapter;
  try {
    adapter = await factory.connect();
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => {});
    throw connectionError(error, config);
  }
  reportCharColumnsAsCharacter(adapter, ColumnTypeEnum.Character);
  const session = { adapter, pool, lastScriptError: undefined };
  adapter.executeScript = async (script) => {
    try {
      await runScript(pool, script);
    } catch (error) {
      session.lastScriptError = error;
      adapter.onError(error); // rethrows as a DriverAdapterError the engine understands
    }
  };
  return session;
}

/**
 * See PG_CHAR_OID. adapter-pg maps pg's field type ids in queryRaw and throws on `"char"`;
 * performIO is where it gets pg's result, so the ids are swapped there and the column types
 * fixed on the way out. Keyed by the query object, so interleaved queries cannot mix up.
 */
function reportCharColumnsAsCharacter(adapter, characterColumnType) {
  const charColumnsByQuery = new WeakMap();
  const performIO = adapter.performIO.bind(adapter);
  adapter.performIO = async (query) => {
    const result = await performIO(query);
    const charColumns = [];
    result.fields?.forEach((field, index) => {
      if (field.dataTypeID === PG_CHAR_OID) {
        field.dataTypeID = PG_TEXT_OID;
        charColumns.push(index);
      }
    });
    if (charColumns.length > 0) charColumnsByQuery.set(query, charColumns);
    return result;
  };
  const queryRaw = adapter.queryRaw.bind(adapter);
  adapter.queryRaw = async (query) => {
    const resultSet = await queryRaw(query);
    for (const index of charColumnsByQuery.get(query) ?? []) {
      resultSet.columnTypes[index] = characterColumnType;
    }
    return resultSet;
  };
}

class PostgresMigrationAdapterFactory {
  provider = 'postgres';
  adapterName = '@prisma/adapter-pg';

  constructor(datasource) {
    this.main = targetFromUrl(datasource.url);
    this.shadow = datasource.shadowDatabaseUrl ? targetFromUrl(datasource.shadowDatabaseUrl) : undefined;
    this.mainSession = undefined;
    /** Temporary shadow databases not dropped yet, with their open pool if any. */
    this.temporaryDatabases = new Map();
    if (this.shadow && sameDatabase(this.main.config, this.shadow.config)) {
      throw new UserFacingError(
        'P3014',
        'The shadow database you configured appears to be the same as the main database. Please specify another shadow database.',
      );
    }
  }

  async connect() {
    this.mainSession = await openSingleSessionAdapter(this.main);
    return this.mainSession.adapter;
  }

  async connectToShadowDb() {
    return this.shadow ? this.connectToConfiguredShadowDb() : this.connectToTemporaryShadowDb();
  }

  /** SHADOW_DATABASE_URL: emptied before use, like the native engine does. */
  async connectToConfiguredShadowDb() {
    const session = await openSingleSessionAdapter(this.shadow);
    await assertIsNotMainDatabase(session.pool, this.main.config.database, this.shadow.config.database);
    await runScript(
      session.pool,
      `DROP SCHEMA IF EXISTS ${quoteIdent(this.shadow.schema)} CASCADE; CREATE SCHEMA ${quoteIdent(this.shadow.schema)};`,
    );
    return session.adapter;
  }

  /** No shadow URL: a throw-away database next to the main one (needs CREATEDB). */
  async connectToTemporaryShadowDb() {
    const name = `${SHADOW_DB_PREFIX}${randomUUID().replaceAll('-', '_')}`;
    const admin = this.mainSession.pool;
    try {
      await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
      this.temporaryDatabases.set(name, undefined);
    } catch (error) {
      throw new UserFacingError(
        'P3014',
        `Prisma Migrate could not create the shadow database. Please make sure the database user has permission to create databases, or set SHADOW_DATABASE_URL. Original error: ${sqlErrorMessage(error)}`,
      );
    }
    let session;
    try {
      session = await openSingleSessionAdapter({ config: { ...this.main.config, database: name }, schema: this.main.schema });
      this.temporaryDatabases.set(name, session.pool);
      await assertIsNotMainDatabase(session.pool, this.main.config.database, name);
    } catch (error) {
      await this.dropTemporaryDatabase(name);
      throw error;
    }
    const dispose = session.adapter.dispose.bind(session.adapter);
    session.adapter.dispose = async () => {
      await dispose();
      this.temporaryDatabases.set(name, undefined);
      await this.dropTemporaryDatabase(name);
    };
    return session.adapter;
  }

  async dropTemporaryDatabase(name) {
    // Still open when the engine did not dispose of it (a panic): a plain DROP would wait.
    await this.temporaryDatabases
      .get(name)
      ?.end()
      .catch(() => {});
    const admin = this.mainSession.pool;
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
    } catch {
      await admin
        .query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`)
        .catch((error) => log('WARN', `could not drop the shadow database ${name}: ${error.message}`));
    }
    this.temporaryDatabases.delete(name);
  }

  async close() {
    if (!this.mainSession) return;
    for (const name of [...this.temporaryDatabases.keys()]) await this.dropTemporaryDatabase(name);
    await this.mainSession.pool.end().catch(() => {});
  }
}

function sameDatabase(a, b) {
  return a.host === b.host && a.port === b.port && a.database === b.database;
}

async function assertIsNotMainDatabase(pool, mainDatabase, expected) {
  const { rows } = await pool.query('SELECT current_database() AS name');
  const actual = rows[0]?.name;
  if (actual !== expected || actual === mainDatabase) {
    throw new Error(`Refusing to use database "${actual}" as the shadow database (expected "${expected}").`);
  }
}

// ---------------------------------------------------------------------------------------------
// The Wasm engine

async function loadWasmEngine() {
  const { readFile } = await import('node:fs/promises');
  const bindingsPath = require.resolve(`${WASM_PACKAGE}/schema_engine_bg`);
  const bindings = await import(bindingsPath);
  const bytes = await readFile(bindingsPath.replace(/\.js$/, '.wasm'));
  // The package is built for bundlers (`import * as wasm from "./x.wasm"`); do their part by hand.
  const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': bindings });
  bindings.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start();
  return bindings;
}

let lastPanicMessage;
globalThis.PRISMA_WASM_PANIC_REGISTRY = {
  set_message(message) {
    lastPanicMessage = message;
  },
};

function forwardEngineLog(chunk) {
  for (const line of String(chunk).split('\n')) {
    if (line.trim() !== '') process.stderr.write(`${redact(line)}\n`);
  }
}

class EngineHost {
  constructor(args) {
    this.args = args;
    this.enginePromise = undefined;
    this.factory = undefined;
    this.primedMigrationLists = new Set();
  }

  engine() {
    this.enginePromise ??= this.startEngine();
    return this.enginePromise;
  }

  async startEngine() {
    const { datasource } = this.args;
    if (!datasource?.url) {
      throw new UserFacingError('P1012', 'The schema engine needs a database: set `datasource.url` in prisma.config.ts (DATABASE_URL).');
    }
    const [{ bindMigrationAwareSqlAdapterFactory }, wasm] = await Promise.all([import('@prisma/driver-adapter-utils'), loadWasmEngine()]);
    this.factory = new PostgresMigrationAdapterFactory(datasource);
    const datamodels = this.args.datamodels.map((path) => [path, readFileSync(path, 'utf8')]);
    return wasm.SchemaEngine.new(
      { datamodels: datamodels.length > 0 ? datamodels : undefined },
      forwardEngineLog,
      bindMigrationAwareSqlAdapterFactory(this.factory),
    );
  }

  /**
   * createMigration and evaluateDataLoss build the schema of the migration history from the
   * engine's cache, which only diagnoseMigrationHistory/devDiagnostic fill with a shadow
   * database. After `migrate dev` applies a pending migration that cache misses, and the engine
   * fails asking for a shadow database from an external factory it does not have in those
   * methods. Diagnosing first (with the shadow database) fills the cache for this history.
   * Skipped when devDiagnostic already did it and nothing was applied since (saves a shadow
   * database per `migrate dev`).
   */
  async primeMigrationHistory(engine, params) {
    const key = JSON.stringify(params.migrationsList);
    if (this.primedMigrationLists.has(key)) return;
    await engine.diagnoseMigrationHistory({
      migrationsList: params.migrationsList,
      optInToShadowDatabase: true,
      filters: params.filters ?? { externalTables: [], externalEnums: [] },
    });
    this.primedMigrationLists.add(key);
  }

  async dispatch(method, params, rpc) {
    switch (method) {
      case 'getDatabaseVersion':
        // The Wasm engine always reports its own database; its params would only be validated.
        return (await this.engine()).version();
      case 'createDatabase':
        return { databaseName: await createDatabase(datasourceUrl(params?.datasource, this.args)) };
      case 'dbExecute':
        return this.dbExecute(params);
      case 'diff':
        return this.diff(params, rpc);
      case 'evaluateDataLoss':
      case 'createMigration': {
        const engine = await this.engine();
        await this.primeMigrationHistory(engine, params);
        return engine[method](params);
      }
      case 'applyMigrations': {
        const engine = await this.engine();
        const session = this.factory.mainSession;
        session.lastScriptError = undefined;
        try {
          const output = await engine.applyMigrations(params);
          if (output.appliedMigrationNames.length > 0) this.primedMigrationLists.clear();
          return output;
        } catch (error) {
          throw migrationFailure(error, session.lastScriptError);
        }
      }
      case 'devDiagnostic': {
        const engine = await this.engine();
        const output = await engine.devDiagnostic(params);
        this.primedMigrationLists.add(JSON.stringify(params.migrationsList));
        return output;
      }
      case 'diagnoseMigrationHistory':
      case 'ensureConnectionValidity':
      case 'introspect':
      case 'introspectSql':
      case 'markMigrationApplied':
      case 'markMigrationRolledBack':
      case 'reset':
      case 'schemaPush': {
        const engine = await this.engine();
        return engine[method](params);
      }
      case 'debugPanic': {
        const engine = await this.engine();
        return engine.debugPanic();
      }
      default:
        throw Object.assign(new Error(`Method not found: ${method}`), { rpcCode: -32601 });
    }
  }

  async dbExecute(params) {
    const url = datasourceUrl(
      params.datasourceType?.tag === 'url' ? { tag: 'ConnectionString', url: params.datasourceType.url } : undefined,
      this.args,
    );
    const { config } = targetFromUrl(url);
    try {
      await withClient(config, (client) => runScript(client, params.script));
    } catch (error) {
      if (error instanceof UserFacingError) throw error;
      throw new UserFacingError(undefined, `db error: ${sqlErrorMessage(error)}`);
    }
    return {};
  }

  /** The native CLI engine prints the diff through a `print` request to the CLI. */
  async diff(params, rpc) {
    const engine = await this.engine();
    const result = await engine.diff(params);
    if (result.stdout) {
      await rpc.request('print', { content: result.stdout.replace(/\n$/, '') });
    }
    return { exitCode: result.exitCode, stdout: null };
  }

  async close() {
    const engine = await this.enginePromise?.catch(() => undefined);
    try {
      engine?.free();
    } catch {
      // already freed or poisoned by a panic
    }
    await this.factory?.close();
  }
}

function datasourceUrl(datasourceParam, args) {
  if (datasourceParam?.tag === 'ConnectionString' && datasourceParam.url) return datasourceParam.url;
  return args.datasource?.url;
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC

function isWasmPanic(error) {
  return error?.name === 'RuntimeError' || lastPanicMessage !== undefined;
}

function toRpcError(error) {
  if (error?.rpcCode) {
    return { code: error.rpcCode, message: error.message };
  }
  if (isWasmPanic(error)) {
    // The CLI shows `message` for panics and `data.message` otherwise.
    const message = redact(lastPanicMessage ?? error?.message ?? String(error));
    return { code: 4466, message, data: { is_panic: true, message, backtrace: null } };
  }
  if (error instanceof UserFacingError) {
    return {
      code: 4466,
      message: 'An error happened. Check the data field for details.',
      data: { is_panic: false, message: redact(error.message), error_code: error.errorCode, meta: error.meta },
    };
  }
  // Errors from the Wasm engine carry `code` (a Prisma error code) for user-facing errors,
  // and are SchemaConnectorErrors otherwise.
  const message = redact(error?.message ?? String(error));
  const data = { is_panic: false, message };
  if (typeof error?.code === 'string' && /^P\d{4}$/.test(error.code)) {
    data.error_code = error.code;
    data.meta = error.meta ?? {};
  }
  return { code: 4466, message: 'An error happened. Check the data field for details.', data };
}

function serveRpc(host) {
  let nextOutgoingId = 1;
  const pendingOutgoing = new Map();
  let queue = Promise.resolve();
  let stopping = false;

  const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

  const rpc = {
    request(method, params) {
      const id = `engine-${nextOutgoingId++}`;
      return new Promise((resolve, reject) => {
        pendingOutgoing.set(id, { resolve, reject });
        send({ jsonrpc: '2.0', id, method, params });
      });
    },
  };

  // Drops leftover shadow databases and ends the session (releasing the advisory lock), but
  // never hangs the CLI on a broken connection or a poisoned Wasm instance.
  const stop = (exitCode, { waitForQueue }) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(exitCode), 5000).unref();
    (waitForQueue ? queue.catch(() => {}) : Promise.resolve())
      .then(() => host.close())
      .finally(() => process.stdout.write('', () => process.exit(exitCode)));
  };

  let currentRequest;
  const handle = async (request) => {
    currentRequest = request;
    try {
      const result = await host.dispatch(request.method, request.params, rpc);
      send({ jsonrpc: '2.0', id: request.id, result: result ?? {} });
    } catch (error) {
      const rpcError = toRpcError(error);
      log('ERROR', rpcError.data?.message ?? rpcError.message, rpcError.data?.error_code ? { error_code: rpcError.data.error_code } : {});
      send({ jsonrpc: '2.0', id: request.id, error: rpcError });
      if (rpcError.data?.is_panic) {
        // The Wasm instance is unusable after a panic; the native engine exits with 101 too.
        stop(101, { waitForQueue: false });
      }
    } finally {
      currentRequest = undefined;
    }
  };

  // A panic inside a Wasm callback surfaces here rather than in the awaited call.
  const crash = (error) => {
    const rpcError = toRpcError(error);
    log('ERROR', rpcError.data?.message ?? rpcError.message);
    if (currentRequest !== undefined) send({ jsonrpc: '2.0', id: currentRequest.id, error: rpcError });
    stop(rpcError.data?.is_panic ? 101 : 1, { waitForQueue: false });
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      return;
    }
    if (message.method === undefined && message.id !== undefined && pendingOutgoing.has(message.id)) {
      const pending = pendingOutgoing.get(message.id);
      pendingOutgoing.delete(message.id);
      if (message.error) pending.reject(new Error(message.error.message));
      else pending.resolve(message.result);
      return;
    }
    // One request at a time: the Wasm engine methods take `&mut self`.
    queue = queue.then(() => handle(message));
  });
  lines.on('close', () => stop(0, { waitForQueue: true }));
  process.on('SIGTERM', () => stop(0, { waitForQueue: true }));
  process.on('SIGINT', () => stop(130, { waitForQueue: true }));
}

// ---------------------------------------------------------------------------------------------
// `cli` sub-commands: the CLI runs these as separate processes and reads errors from stderr

async function runCliCommand(args) {
  // The CLI skips the first stderr line and parses the rest as JSON log lines.
  log('INFO', 'Starting schema engine CLI');
  const url = args.datasource?.url;
  try {
    switch (args.cli) {
      case 'can-connect-to-database':
        await canConnect(url);
        break;
      case 'create-database': {
        const name = await createDatabase(url);
        process.stdout.write(`Database '${name}' was successfully created.\n`);
        break;
      }
      case 'drop-database':
        await dropDatabase(url);
        process.stdout.write('The database was successfully dropped.\n');
        break;
      default:
        throw new UserFacingError(undefined, `Unknown cli command: ${args.cli}`);
    }
  } catch (error) {
    const fields = error instanceof UserFacingError && error.errorCode ? { error_code: error.errorCode } : {};
    log('ERROR', error instanceof UserFacingError ? error.message : sqlErrorMessage(error), fields);
    process.exit(1);
  }
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    log('ERROR', error.message);
    process.exit(1);
  }
  if (args.version) {
    process.stdout.write(`${engineVersion()}\n`);
    return;
  }
  if (args.cli) {
    await runCliCommand(args);
    return;
  }
  serveRpc(new EngineHost(args));
}

try {
  await main();
} catch (error) {
  log('ERROR', error?.message ?? String(error));
  process.exit(1);
}
