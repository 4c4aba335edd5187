import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import type pg from 'pg';
import { poolOf, type Database } from './client.ts';

/**
 * Hand-written statements for the hottest reads (a page of events with its total and counts in one
 * round trip, the storefront's listings), where Prisma would take several statements and ~1 ms of
 * CPU per query to build and map them (`npm run bench` measures the difference). Everything else uses Prisma.
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

/**
 * A statement of the whole service rather than of one organisation (a rate-limit window), sent on
 * a tenant's connection beside its statements: `text` and `values` as pg takes them.
 */
export interface SystemStatement {
  text: string;
  values: unknown[];
}

/**
 * Statements sent together on one connection (TenantSql.together, TenantSql.transaction): `rows`
 * and `systemRows` send at once (pg's pipeline mode), so statements sent one after the other
 * without waiting leave in one write and their answers come back in one round trip.
 */
export interface FlightStatements extends TenantStatements {
  /** The rows of a statement of the whole service (no organisation to check), in this flight. */
  systemRows<T>(statement: SystemStatement): Promise<T[]>;
}

/**
 * The statements of a transaction (TenantSql.transaction). `rows` sends its statement at once
 * (pipeline mode), so a statement whose answer is not needed yet can be sent and awaited later;
 * the transaction still commits only once every statement sent has succeeded.
 */
export interface TransactionStatements extends FlightStatements {
  /**
   * The rows of `statement`, the transaction's last: it is sent together with COMMIT, so the row
   * locks it takes are held only while PostgreSQL runs it and commits, not for a round trip
   * through a busy API process (the inventory rows every buyer of a ticket type waits for). It must
   * raise an error (see raise_unless) where a short answer would have to undo the transaction,
   * since the commit does not wait for its rows; nothing may run after it.
   */
  rowsThenCommit<T>(statement: Statement): Promise<T[]>;
}

export interface TenantSql extends TenantStatements {
  /**
   * Runs `work` in one transaction on one pooled connection (BEGIN ... COMMIT; ROLLBACK when it
   * throws). BEGIN goes out with the first statement and COMMIT with the last (the connection is
   * in pg's pipeline mode meanwhile), so a transaction costs no round trips of its own. Waiting for
   * the connection is bounded like every query's (the pool's connectionTimeoutMillis; past it the
   * request answers 503, src/errors.ts).
   */
  transaction<T>(work: (tx: TransactionStatements) => Promise<T>): Promise<T>;
  /**
   * Runs `work` with statements that share one pooled connection and leave together: what `work`
   * sends before it first waits goes out in one write and is answered in one round trip, where
   * `ctx.sql.rows` would take a connection and a round trip each. No transaction: each statement
   * commits (or fails) on its own. The connection is released once every statement sent has been
   * answered, so nothing may be sent on it after `work` ends.
   */
  together<T>(work: (on: FlightStatements) => Promise<T>): Promise<T>;
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

/**
 * A statement of the whole service rather than of one organisation (the webhook outbox the workers
 * claim, load and record for every tenant), prepared by name as the tenant statements are: planning
 * the outbox's claim-and-load anew cost PostgreSQL more than running it (an ordered run of
 * bench/webhooks.ts). `statement` is a Prisma.sql template's text and values; rows come as pg
 * reads them (timestamps as Dates, json parsed), as Prisma's $queryRaw answers them for these
 * statements' columns.
 */
export function systemRows<T>(db: Database, statement: SystemStatement): Promise<T[]> {
  return run<T>(poolOf(db), statement);
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

async function run<T>(on: pg.Pool | pg.PoolClient, statement: SystemStatement): Promise<T[]> {
  const result = await on.query({ name: preparedName(statement.text), text: statement.text, values: statement.values });
  return result.rows as T[];
}

type PipelinedClient = pg.PoolClient & { pipeline: boolean; connection: { stream: Socket } };

/**
 * A pooled connection in pg's pipeline mode, for one transaction or flight only (the connection is
 * idle now and again when it is released): each query is written at once instead of after the
 * previous one's answer, and the queries written in one turn of the event loop leave in one write
 * (a socket write, writev, was the largest single cost of the API process under an on-sale's load).
 * Every query still has its own Sync, so a failed one does not take the others with it outside a
 * transaction, and inside one leaves it aborted: the statements behind it fail and the COMMIT
 * behind them answers ROLLBACK.
 */
class Pipeline {
  /** Every statement sent, in order: the first failure is the one to answer with. */
  readonly sent: Promise<unknown>[] = [];
  readonly #socket: Socket;
  #corked = false;

  constructor(readonly client: pg.PoolClient) {
    const pipelined = client as PipelinedClient;
    pipelined.pipeline = true;
    this.#socket = pipelined.connection.stream;
  }

  /** Holds what is written in this turn of the event loop back for one write at its end. */
  cork(): void {
    if (this.#corked) return;
    this.#corked = true;
    this.#socket.cork();
    process.nextTick(() => {
      this.#corked = false;
      this.#socket.uncork();
    });
  }

  /** Sends now; the promise is awaited by its caller, or by settle(). */
  send<T>(statement: SystemStatement): Promise<T[]> {
    this.cork();
    const rows = run<T>(this.client, statement);
    rows.catch(() => undefined);
    this.sent.push(rows);
    return rows;
  }

  /** Waits for every statement sent; the first failure throws. */
  async settle(): Promise<void> {
    for (const statement of this.sent) await statement;
  }

  end(broken = false): void {
    (this.client as PipelinedClient).pipeline = false;
    this.client.release(broken);
  }
}

/** A promise of `send`'s, or its synchronous failure as a rejection (never an unhandled one). */
function attempt<T>(send: () => Promise<T>): Promise<T> {
  try {
    return send();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
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

  async together<T>(work: (on: FlightStatements) => Promise<T>): Promise<T> {
    const pipeline = new Pipeline(await this.pool.connect());
    const organisationId = this.organisationId;
    let ended = false;
    const send = <R>(statement: SystemStatement): Promise<R[]> =>
      attempt(() => {
        if (ended) throw new Error('a statement after its flight ended');
        return pipeline.send<R>(statement);
      });
    try {
      return await work({
        organisationId,
        statement: () => new Statement(organisationId),
        rows: <R>(statement: Statement) =>
          attempt(() => {
            assertScoped(statement, organisationId);
            return send<R>(statement);
          }),
        systemRows: send,
      });
    } finally {
      ended = true;
      // Released only once every answer is in: a connection with a statement still in flight
      // would hand its answer to the next borrower.
      await Promise.allSettled(pipeline.sent);
      pipeline.end();
    }
  }

  async transaction<T>(work: (tx: TransactionStatements) => Promise<T>): Promise<T> {
    const pipeline = new Pipeline(await this.pool.connect());
    const { client } = pipeline;
    const organisationId = this.organisationId;
    let broken = false;
    let committed = false;
    // BEGIN travels with the first statement and COMMIT with the last, and a statement whose rows
    // are not needed yet (webhooks being recorded) need not be waited for before the next is sent.
    pipeline.cork();
    const begun = client.query('BEGIN');
    begun.catch(() => undefined); // awaited below; a failure fails the first statement too
    pipeline.sent.push(begun);
    const send = <R>(statement: SystemStatement): Promise<R[]> =>
      attempt(() => {
        if (committed) throw new Error('a statement after the transaction committed');
        return pipeline.send<R>(statement);
      });
    const ended = (answer: pg.QueryResult) => {
      if (answer.command !== 'COMMIT') throw new Error(`the transaction did not commit (${answer.command})`);
      committed = true;
    };
    const rows = <R>(statement: Statement): Promise<R[]> =>
      attempt(() => {
        assertScoped(statement, organisationId);
        return send<R>(statement);
      });
    try {
      const result = await work({
        organisationId,
        statement: () => new Statement(organisationId),
        rows,
        systemRows: send,
        async rowsThenCommit<R>(statement: Statement): Promise<R[]> {
          assertScoped(statement, organisationId);
          const answer = send<R>(statement);
          // In the same write as the statement (the pipeline's cork holds both until the tick ends).
          const commit = client.query('COMMIT');
          commit.catch(() => undefined); // awaited below, once the statements' own errors are known
          await pipeline.settle();
          const found = await answer;
          ended(await commit);
          return found;
        },
      });
      await pipeline.settle();
      if (!committed) ended(await client.query('COMMIT'));
      return result;
    } catch (error) {
      if (!committed) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
      }
      throw error;
    } finally {
      pipeline.end(broken);
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
