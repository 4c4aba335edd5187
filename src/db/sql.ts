import { createHash } from 'node:crypto';
import type pg from 'pg';
import { poolOf, type Database } from './client.ts';

/**
 * Hand-written statements for the hottest reads (a page of events with its total and counts in one
 * round trip, the storefront's listings), where Prisma would take several statements and ~1 ms of
 * CPU per query to build and map them (`npm run bench` measures the difference; README "Where the
 * time of a request goes"). Everything else uses Prisma.
 *
 * Tenancy holds here as in src/db/tenant.ts: a TenantSql is bound to one organisation, which is
 * always `$1`, and a statement that does not compare an `"organisationId"` with `$1` is refused
 * before it reaches the database. A statement names every table's organisation condition itself
 * (each join and subquery), which review and the tenancy tests check.
 */
export interface TenantStatements {
  readonly organisationId: string;
  /** A new statement of this organisation (its `$1`). */
  statement(): Statement;
  /** The rows of `statement`. */
  rows<T>(statement: Statement): Promise<T[]>;
}

export interface TenantSql extends TenantStatements {
  /**
   * Runs `work` in one transaction on one pooled connection (BEGIN ... COMMIT; ROLLBACK when it
   * throws). Waiting for the connection is bounded like every query's (the pool's
   * connectionTimeoutMillis; past it the request answers 503, src/errors.ts).
   */
  transaction<T>(work: (tx: TenantStatements) => Promise<T>): Promise<T>;
}

/**
 * A statement being written: `param(value)` adds a value and answers its placeholder, so the
 * parts of a dynamic WHERE keep their numbers right. `$1` is the organisation.
 */
export class Statement {
  readonly values: unknown[];
  #text = '';

  constructor(organisationId: string) {
    this.values = [organisationId];
  }

  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  add(text: string): this {
    this.#text += text;
    return this;
  }

  get text(): string {
    return this.#text;
  }
}

/**
 * Statements are prepared (named by their text) so each connection parses and plans one once:
 * PostgreSQL then runs a cached plan, where planning a statement of this size anew costs more
 * than executing it. The texts are few (a list's filters combine in a handful of ways).
 */
const names = new Map<string, string>();
const MAX_NAMES = 500;

function preparedName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMES) return undefined;
    name = `s_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

const TENANT_CONDITION = /"organisationId"\s*=\s*\$1(?!\d)/;
const INSERT = /INSERT\s+INTO/gi;
/** An insert of this organisation's rows: "organisationId" is its first column and $1 its first value. */
const TENANT_INSERT =
  /INSERT\s+INTO\s+"?\w+"?\s*(?:AS\s+\w+\s*)?\(\s*"organisationId"\s*,[^)]*\)\s*(?:VALUES\s*\(\s*\$1\s*,|SELECT\s+\$1\s*,)/gi;

/**
 * Refuses a statement that is not visibly scoped to the organisation of `$1`: it must compare
 * "organisationId" with $1 (reads, updates, deletes), and every INSERT in it must write $1 as the
 * row's "organisationId" (its first column).
 */
export function assertScoped(statement: Statement, organisationId: string): void {
  if (statement.values[0] !== organisationId) throw new Error('a statement of another organisation');
  const text = statement.text;
  const inserts = text.match(INSERT)?.length ?? 0;
  const scopedInserts = text.match(TENANT_INSERT)?.length ?? 0;
  if (inserts !== scopedInserts) throw new Error('a tenant INSERT must write $1 as its first column, "organisationId"');
  if (inserts === 0 && !TENANT_CONDITION.test(text)) throw new Error('a tenant statement must compare "organisationId" with $1');
}

async function run<T>(on: pg.Pool | pg.PoolClient, statement: Statement): Promise<T[]> {
  const result = await on.query({ name: preparedName(statement.text), text: statement.text, values: statement.values });
  return result.rows as T[];
}

class ScopedSql implements TenantSql {
  constructor(
    private readonly pool: pg.Pool,
    readonly organisationId: string,
  ) {}

  async rows<T>(statement: Statement): Promise<T[]> {
    assertScoped(statement, this.organisationId);
    return run<T>(this.pool, statement);
  }

  statement(): Statement {
    return new Statement(this.organisationId);
  }

  async transaction<T>(work: (tx: TenantStatements) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const organisationId = this.organisationId;
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work({
        organisationId,
        statement: () => new Statement(organisationId),
        async rows<R>(statement: Statement): Promise<R[]> {
          assertScoped(statement, organisationId);
          return run<R>(client, statement);
        },
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }
}

const cache = new WeakMap<Database, Map<string, ScopedSql>>();
const CACHE_SIZE = 1000;

/** The statements of one organisation (kept per organisation like tenantDatabase's clients). */
export function tenantSql(db: Database, organisationId: string): TenantSql {
  let byOrganisation = cache.get(db);
  if (!byOrganisation) cache.set(db, (byOrganisation = new Map<string, ScopedSql>()));
  let scoped = byOrganisation.get(organisationId);
  if (!scoped) {
    if (byOrganisation.size >= CACHE_SIZE) byOrganisation.delete(byOrganisation.keys().next().value!);
    scoped = new ScopedSql(poolOf(db), organisationId);
    byOrganisation.set(organisationId, scoped);
  }
  return scoped;
}
