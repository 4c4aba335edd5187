import { beforeAll, describe, expect, it } from 'vitest';
import { TENANT_MODELS, tenantDatabase, TenancyViolation } from '../../src/db/tenant.ts';
import { tenantSql } from '../../src/db/sql.ts';
import { newId } from '../../src/ids.ts';
import { useTestApp } from '../support/app.ts';
import { prismaError } from '../support/expect.ts';
import { createOrganisation, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let a: TestOrganisation;
let b: TestOrganisation;
beforeAll(async () => {
  [a, b] = await Promise.all([createOrganisation(app, 'tena'), createOrganisation(app, 'tenb')]);
});

describe('the tenant-scoped database handle', () => {
  it('knows every model with an organisationId column as tenant-owned', () => {
    for (const model of [
      'Account',
      'User',
      'Role',
      'RoleAssignment',
      'ApiKey',
      'Event',
      'Order',
      'Pass',
      'WebhookDelivery',
      'WebhookAttempt',
    ]) {
      expect(TENANT_MODELS.has(model)).toBe(true);
    }
    expect(TENANT_MODELS.has('Person')).toBe(false);
  });

  it('reads only its organisation: lists, counts, and lookups by the id of another organisation', async () => {
    const db = tenantDatabase(app().runtime.db, a.organisation.id);
    expect(await db.role.count()).toBe(4);
    expect((await db.role.findMany()).every((r) => r.organisationId === a.organisation.id)).toBe(true);
    expect(await db.role.findUnique({ where: { id: b.roles[0]!.id } })).toBeNull();
    expect(await db.account.findFirst({ where: { id: b.account.id } })).toBeNull();
    expect((await db.organisation.findMany()).map((o) => o.id)).toEqual([a.organisation.id]);
  });

  it('cannot change or delete rows of another organisation', async () => {
    const db = tenantDatabase(app().runtime.db, a.organisation.id);
    // Filtered by organisation, the row is not there to update: Prisma's "record not found".
    await expect(db.account.update({ where: { id: b.account.id }, data: { name: 'stolen' } })).rejects.toSatisfy(prismaError('P2025'));
    expect((await db.account.updateMany({ where: { id: b.account.id }, data: { name: 'stolen' } })).count).toBe(0);
    expect((await db.roleAssignment.deleteMany({ where: { id: b.assignment.id } })).count).toBe(0);
    const untouched = await app().runtime.db.account.findUnique({ where: { id: b.account.id } });
    expect(untouched!.name).toBe('Main account');
  });

  it('stamps creations with its organisation and refuses another one', async () => {
    const db = tenantDatabase(app().runtime.db, a.organisation.id);
    const created = await db.account.create({ data: { id: newId('account'), name: 'Stamped' } as never });
    expect(created.organisationId).toBe(a.organisation.id);
    await expect(
      db.account.create({ data: { id: newId('account'), organisationId: b.organisation.id, name: 'Smuggled' } }),
    ).rejects.toThrow(TenancyViolation);
  });

  it('keeps the scope inside interactive transactions', async () => {
    const db = tenantDatabase(app().runtime.db, a.organisation.id);
    const [count, foreign] = await db.$transaction(async (tx) => [
      await tx.role.count(),
      await tx.account.findFirst({ where: { id: b.account.id } }),
    ]);
    expect(count).toBe(4);
    expect(foreign).toBeNull();
  });

  it('composite foreign keys refuse a row pointing into another organisation even without the handle', async () => {
    await expect(
      app().runtime.db.roleAssignment.create({
        data: {
          id: newId('roleAssignment'),
          organisationId: a.organisation.id,
          userId: a.user.id,
          accountId: b.account.id,
          roleId: a.roles[0]!.id,
        },
      }),
    ).rejects.toSatisfy(prismaError('P2003')); // the foreign key (organisationId, accountId) is violated
  });

  it('hand-written statements (src/db/sql.ts): refuses any not scoped to $1, reads only its organisation, and a failed transaction leaves nothing', async () => {
    const sql = tenantSql(app().runtime.db, a.organisation.id);
    const statement = (text: string, ...values: unknown[]) => {
      const s = sql.statement();
      for (const value of values) s.param(value);
      return s.add(text);
    };
    // Not scoped: no organisation condition, an INSERT that does not write $1 first, a mixed one.
    await expect(sql.rows(statement('SELECT id FROM accounts'))).rejects.toThrow(/organisationId/);
    await expect(
      sql.rows(statement(`INSERT INTO accounts (id, "organisationId", name, "updatedAt") VALUES ($2, $1, 'x', now())`, newId('account'))),
    ).rejects.toThrow(/INSERT/);
    await expect(
      sql.rows(
        statement(
          `WITH a AS (INSERT INTO accounts ("organisationId", id, name, "updatedAt") VALUES ($1, $2, 'x', now()))
           INSERT INTO accounts (id, "organisationId", name, "updatedAt") VALUES ($3, $4, 'y', now())`,
          newId('account'),
          newId('account'),
          b.organisation.id,
        ),
      ),
    ).rejects.toThrow(/INSERT/);
    const other = sql.statement();
    other.values[0] = b.organisation.id;
    await expect(sql.rows(other.add('SELECT id FROM accounts WHERE "organisationId" = $1'))).rejects.toThrow(/another organisation/);
    // Scoped: another organisation's id finds nothing.
    expect(await sql.rows(statement('SELECT id FROM accounts WHERE "organisationId" = $1 AND id = $2', b.account.id))).toEqual([]);
    // A transaction that fails after a write rolls it back.
    const id = newId('account');
    await expect(
      sql.transaction(async (tx) => {
        const insert = tx.statement();
        insert.add(`INSERT INTO accounts ("organisationId", id, name, "updatedAt") VALUES ($1, ${insert.param(id)}, 'Rolled back', now())`);
        await tx.rows(insert);
        throw new Error('fault mid-operation');
      }),
    ).rejects.toThrow('fault mid-operation');
    expect(await app().runtime.db.account.findUnique({ where: { id } })).toBeNull();
    await sql.transaction(async (tx) => {
      const insert = tx.statement();
      insert.add(`INSERT INTO accounts ("organisationId", id, name, "updatedAt") VALUES ($1, ${insert.param(id)}, 'Committed', now())`);
      await tx.rows(insert);
    });
    expect((await app().runtime.db.account.findUnique({ where: { id } }))?.organisationId).toBe(a.organisation.id);
  });

  it('a last statement sent with its COMMIT (rowsThenCommit): its raise undoes the whole transaction, its success commits, and nothing runs after it', async () => {
    const sql = tenantSql(app().runtime.db, a.organisation.id);
    const names = async (...ids: string[]) =>
      (await app().runtime.db.account.findMany({ where: { id: { in: ids } }, orderBy: { name: 'asc' } })).map((row) => row.name);
    const insert = (tx: { statement(): ReturnType<typeof sql.statement> }, id: string, name: string) => {
      const s = tx.statement();
      return s.add(`INSERT INTO accounts ("organisationId", id, name, "updatedAt") VALUES ($1, ${s.param(id)}, ${s.param(name)}, now())`);
    };
    const [first, last] = [newId('account'), newId('account')];
    // The last statement raises (as a hold that finds too few tickets does): neither row stays.
    const raising = (tx: { statement(): ReturnType<typeof sql.statement> }, ok: boolean) => {
      const s = tx.statement();
      return s.add(`WITH made AS (INSERT INTO accounts ("organisationId", id, name, "updatedAt") VALUES ($1, ${s.param(last)}, 'Last', now()) RETURNING id)
        SELECT raise_unless(${s.param(ok)}::boolean AND EXISTS (SELECT 1 FROM made), 'TS001', 'short') AS ok`);
    };
    await expect(
      sql.transaction(async (tx) => {
        await tx.rows(insert(tx, first, 'First'));
        return tx.rowsThenCommit(raising(tx, false));
      }),
    ).rejects.toMatchObject({ code: 'TS001' });
    expect(await names(first, last)).toEqual([]);
    // The same succeeding commits both; a statement after the commit is refused.
    await expect(
      sql.transaction(async (tx) => {
        await tx.rows(insert(tx, first, 'First'));
        await tx.rowsThenCommit(raising(tx, true));
        return tx.rows(insert(tx, newId('account'), 'Too late'));
      }),
    ).rejects.toThrow(/after the transaction committed/);
    expect(await names(first, last)).toEqual(['First', 'Last']);
    // A statement sent without waiting for it (pipelined) that fails: the transaction answers its
    // error, not the last statement's, and nothing of it stays.
    const [early, late] = [newId('account'), newId('account')];
    await expect(
      sql.transaction(async (tx) => {
        void tx.rows(insert(tx, early, 'Early'));
        const failing = tx.statement();
        void tx.rows(failing.add(`SELECT 1 / 0 AS x FROM accounts WHERE "organisationId" = $1`));
        return tx.rowsThenCommit(insert(tx, late, 'Late'));
      }),
    ).rejects.toThrow(/division by zero/);
    expect(await names(early, late)).toEqual([]);
    // The connection went back to the pool out of pipeline mode, and the pool still works.
    expect(await sql.rows(sql.statement().add('SELECT count(*)::int AS n FROM accounts WHERE "organisationId" = $1'))).toHaveLength(1);
  });
});
