import { beforeAll, describe, expect, it } from 'vitest';
import { TENANT_MODELS, tenantDatabase, TenancyViolation } from '../src/db/tenant.ts';
import { newId } from '../src/ids.ts';
import { useTestApp } from './support/app.ts';
import { prismaError } from './support/expect.ts';
import { createOrganisation, type TestOrganisation } from './support/fixtures.ts';

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
});
