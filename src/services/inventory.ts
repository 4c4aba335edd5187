import type { TenantDatabase } from '../db/tenant.ts';
import type { Database } from '../db/client.ts';
import type { Statement, TenantStatements, TransactionStatements } from '../db/sql.ts';

/**
 * Inventory of one ticket type at one occurrence: `held` by pending orders, `sold` to confirmed
 * ones. The database keeps `held + sold <= capacity` (a CHECK constraint); every change here is
 * one conditional UPDATE of the row, so concurrent checkouts queue on the row lock and each sees
 * the counts the one before it left: the last ticket is held once, never twice.
 *
 * The capacity is the catalogue's at the moment of the hold (the occurrence's when set, else the
 * ticket type's; null = unlimited) and is written with the hold, so a capacity changed in the
 * catalogue applies to the next hold. Release and sale never touch it.
 *
 * The row also keeps its revenue, per currency (migration 20261127120000): a sale adds its line's
 * total in the same UPDATE that moves `sold`, and a refund or cancellation of a confirmed order takes
 * it back in the UPDATE that returns its tickets, so src/services/revenue.ts reads money without
 * scanning orders (test/sales/revenue.test.ts).
 */

/** A transaction client of either handle (tenant-scoped for requests, plain for system sweeps). */
export type Tx = Parameters<Parameters<TenantDatabase['$transaction']>[0]>[0] | Parameters<Parameters<Database['$transaction']>[0]>[0];

export interface InventoryLine {
  ticketTypeId: string;
  occurrenceId: string;
  quantity: number;
}

/** Lines in one fixed order, so two transactions never lock the same rows in opposite orders. */
export function lockOrder<T extends InventoryLine>(lines: readonly T[]): T[] {
  return [...lines].sort((a, b) =>
    a.ticketTypeId === b.ticketTypeId ? a.occurrenceId.localeCompare(b.occurrenceId) : a.ticketTypeId.localeCompare(b.ticketTypeId),
  );
}

export function capacityOf(occurrence: { capacity: number | null }, ticketType: { capacity: number | null }): number | null {
  return occurrence.capacity ?? ticketType.capacity;
}

/**
 * Holds `quantity` more tickets if they remain, in a transaction of hand-written statements
 * (src/db/sql.ts); false (and nothing changed) when they do not.
 */
async function holdSql(tx: TenantStatements, line: InventoryLine & { capacity: number | null }): Promise<boolean> {
  return (await tx.rows(holdStatement(tx, line))).length === 1;
}

/** SQLSTATE of a last hold that found too few tickets left (raise_unless; migration 20261123180000). */
const SHORT_OF_TICKETS = 'TS001';
/** SQLSTATE of a last move whose inventory row is missing. */
const MISSING_ROW = 'TS002';

/**
 * `holdSql` as the transaction's last statement, sent with its COMMIT (rowsThenCommit): the row
 * lock every buyer of the ticket type waits for is held only while PostgreSQL holds and commits.
 * False when the tickets do not remain: the statement raised, and nothing of the transaction stays.
 */
async function holdLastSql(tx: TransactionStatements, line: InventoryLine & { capacity: number | null }): Promise<boolean> {
  return lastWithCommit(tx, holdStatement(tx, line), SHORT_OF_TICKETS);
}

/**
 * Sends `statement` with the transaction's COMMIT, made to raise `code` (raise_unless) when it
 * answers no row, so that an empty answer undoes the transaction instead of being committed.
 * False when it raised `code`; true once committed.
 */
async function lastWithCommit(tx: TransactionStatements, statement: Statement, code: string): Promise<boolean> {
  const sql = tx.statement();
  for (const value of statement.values.slice(1)) sql.param(value);
  sql.add(`WITH answered AS (${statement.text})
    SELECT raise_unless(EXISTS (SELECT 1 FROM answered), '${code}', 'no row') AS answered`);
  try {
    await tx.rowsThenCommit(sql);
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === code) return false;
    throw error;
  }
}

function holdStatement(tx: TenantStatements, line: InventoryLine & { capacity: number | null }): Statement {
  // One statement: the row is created on the first hold, or its counter raised while the
  // capacity allows (ON CONFLICT ... WHERE answers no row when it does not).
  const sql = tx.statement();
  const capacity = sql.param(line.capacity);
  const quantity = sql.param(line.quantity);
  sql.add(`INSERT INTO "inventories" ("organisationId", "ticketTypeId", "occurrenceId", "capacity", "held", "sold", "updatedAt")
    SELECT $1, ${sql.param(line.ticketTypeId)}, ${sql.param(line.occurrenceId)}, ${capacity}::int, ${quantity}::int, 0, now()
     WHERE ${capacity}::int IS NULL OR ${quantity}::int <= ${capacity}::int
    ON CONFLICT ("ticketTypeId", "occurrenceId") DO UPDATE
       SET "held" = "inventories"."held" + EXCLUDED."held", "capacity" = EXCLUDED."capacity", "updatedAt" = now()
     WHERE "inventories"."organisationId" = EXCLUDED."organisationId"
       AND (EXCLUDED."capacity" IS NULL OR "inventories"."held" + "inventories"."sold" + EXCLUDED."held" <= EXCLUDED."capacity")
    RETURNING 1 AS held`);
  return sql;
}

type Change = 'sell' | 'release' | 'return';

/** A line's money as its order was charged: its total, in minor units of its currency. */
export interface LineMoney {
  totalAmount: number;
  currency: string;
}

/**
 * What a move needs of a line: its tickets, and for a sale or a return its money. A return gives
 * back the line's whole total whatever `quantity` of its tickets goes back on sale: a refunded or
 * cancelled order is repaid in full, passes already used included (their seats stay sold).
 */
export type MovedLine<C extends Change> = C extends 'release' ? InventoryLine : InventoryLine & LineMoney;

/** What a change adds to `held` and to `sold`. */
function counterChanges(change: Change, q: number): [held: number, sold: number] {
  return change === 'sell' ? [-q, q] : change === 'release' ? [-q, 0] : [0, -q];
}

/** What a change adds to the row's revenue: the line's total on a sale, its negative on a return (MovedLine carries it). */
function revenueChange(change: Change, line: InventoryLine): { currency: string; amount: number } | null {
  if (change === 'release') return null;
  const { totalAmount, currency } = line as InventoryLine & LineMoney;
  return { currency, amount: change === 'sell' ? totalAmount : -totalAmount };
}

/**
 * Moves tickets between the counters, and their money with them: held -> sold (confirm), held ->
 * free (cancel pending), sold -> free (cancel/refund confirmed).
 */
export async function move<C extends Change>(tx: Tx, organisationId: string, line: MovedLine<C>, change: C): Promise<void> {
  const db = tx as unknown as Database;
  const [held, sold] = counterChanges(change, line.quantity);
  const revenue = revenueChange(change, line);
  const updated = revenue
    ? await db.$executeRaw`
    UPDATE "inventories" SET "held" = "held" + ${held}, "sold" = "sold" + ${sold},
           "revenue" = revenue_plus("revenue", ${revenue.currency}::text, ${revenue.amount}::bigint), "updatedAt" = now()
     WHERE "organisationId" = ${organisationId} AND "ticketTypeId" = ${line.ticketTypeId} AND "occurrenceId" = ${line.occurrenceId}`
    : await db.$executeRaw`
    UPDATE "inventories" SET "held" = "held" + ${held}, "sold" = "sold" + ${sold}, "updatedAt" = now()
     WHERE "organisationId" = ${organisationId} AND "ticketTypeId" = ${line.ticketTypeId} AND "occurrenceId" = ${line.occurrenceId}`;
  if (updated !== 1) throw missingRow(line);
}

/** `move` in a transaction of hand-written statements (src/db/sql.ts). */
async function moveSql<C extends Change>(tx: TenantStatements, line: MovedLine<C>, change: C): Promise<void> {
  if ((await tx.rows(moveStatement(tx, line, change))).length !== 1) throw missingRow(line);
}

/** `moveSql` as the transaction's last statement, sent with its COMMIT (see holdLastSql). */
async function moveLastSql<C extends Change>(tx: TransactionStatements, line: MovedLine<C>, change: C): Promise<void> {
  if (!(await lastWithCommit(tx, moveStatement(tx, line, change), MISSING_ROW))) throw missingRow(line);
}

function moveStatement<C extends Change>(tx: TenantStatements, line: MovedLine<C>, change: C): Statement {
  const [held, sold] = counterChanges(change, line.quantity);
  const revenue = revenueChange(change, line);
  const sql = tx.statement();
  // The money rides in the UPDATE that moves the tickets: no statement of its own, and the row lock
  // that orders every buyer of the ticket type orders its revenue too.
  const earned = revenue
    ? `"revenue" = revenue_plus("revenue", ${sql.param(revenue.currency)}::text, ${sql.param(revenue.amount)}::bigint), `
    : '';
  sql.add(`UPDATE "inventories" SET "held" = "held" + ${sql.param(held)}::int, "sold" = "sold" + ${sql.param(sold)}::int, ${earned}"updatedAt" = now()
     WHERE "organisationId" = $1 AND "ticketTypeId" = ${sql.param(line.ticketTypeId)} AND "occurrenceId" = ${sql.param(line.occurrenceId)}
    RETURNING 1 AS moved`);
  return sql;
}

function missingRow(line: InventoryLine): Error {
  return new Error(`inventory row of ${line.ticketTypeId}/${line.occurrenceId} is missing`);
}

/**
 * Holds every line (in lockOrder), the last of them sent with the transaction's COMMIT (see
 * holdLastSql): nothing may run in the transaction after it. Answers the first line whose tickets
 * do not remain (the caller throws, and nothing of the transaction stays), or null once committed.
 */
export async function holdAllThenCommit<T extends InventoryLine & { capacity: number | null }>(
  tx: TransactionStatements,
  lines: readonly T[],
): Promise<T | null> {
  const ordered = lockOrder(lines);
  for (const line of ordered.slice(0, -1)) if (!(await holdSql(tx, line))) return line;
  const last = ordered.at(-1)!;
  return (await holdLastSql(tx, last)) ? null : last;
}

/** Moves every line (in lockOrder), the last of them sent with the transaction's COMMIT (see holdAllThenCommit). */
export async function moveAllThenCommit<C extends Change>(
  tx: TransactionStatements,
  lines: readonly MovedLine<C>[],
  change: C,
): Promise<void> {
  const ordered = lockOrder(lines);
  for (const line of ordered.slice(0, -1)) await moveSql(tx, line, change);
  await moveLastSql(tx, ordered.at(-1)!, change);
}
