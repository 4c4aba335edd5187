import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

/**
 * Cursors hold a row's place in its list's order (keyset), not an offset: paging on while rows are
 * added never repeats or skips one, and `last`/`before` walk back. Both kinds of list are walked:
 * events (a hand-written statement, newest first) and venues (through Prisma, oldest first).
 */
const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'cursors');
});

const newEvent = async (name: string) =>
  (await api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId: org.account.id, name, timezone: 'UTC' } })).body.event
    .id as string;
const newVenue = async (name: string) =>
  (await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { accountId: org.account.id, name, timezone: 'UTC' } })).body.venue
    .id as string;

interface Connection {
  edges: Array<{ cursor: string; node: { id: string } }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  pagination: { page: number; total: number };
}

async function page(list: 'events' | 'venues', args: Record<string, unknown>): Promise<Connection> {
  const res = await graphql(
    app,
    `query ($first: Int, $after: String, $last: Int, $before: String) {
      ${list}(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        pagination { page total }
      }
    }`,
    args,
    asAdmin(org),
  );
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data[list];
}

const ids = (connection: Connection) => connection.edges.map((edge) => edge.node.id);

describe.each([
  ['events', newEvent],
  ['venues', newVenue],
] as const)('cursors of %s', (list, create) => {
  let existing: string[];

  beforeAll(async () => {
    for (let i = 0; i < 5; i += 1) await create(`${list} ${i}`);
    const all = await page(list, { first: 100 });
    existing = ids(all);
  });

  it('page on without repeating or skipping a row while rows are added', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    // Bounded: a cursor that does not move on would page forever.
    for (let pages = 0; pages < 20; pages += 1) {
      const current: Connection = await page(list, { first: 2, after });
      seen.push(...ids(current));
      await create(`${list} added while paging`);
      if (!current.pageInfo.hasNextPage) break;
      after = current.pageInfo.endCursor;
    }
    expect(new Set(seen).size).toBe(seen.length);
    // Every row that was there at the start is seen, in the list's order.
    expect(seen.filter((id) => existing.includes(id))).toEqual(existing);
  });

  it('walk back with last/before to the same pages', async () => {
    const first = await page(list, { first: 2 });
    const second = await page(list, { first: 2, after: first.pageInfo.endCursor });
    const back = await page(list, { last: 2, before: second.pageInfo.startCursor });
    expect(ids(back)).toEqual(ids(first));
    expect(back.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(second.pagination.page).toBe(2);
    const tail = await page(list, { last: 2 });
    const all = ids(await page(list, { first: 100 }));
    expect(ids(tail)).toEqual(all.slice(-2));
    expect(tail.pageInfo.hasPreviousPage).toBe(true);
  });

  it('refuse a cursor that is not one of the list', async () => {
    const res = await graphql(app, `{ ${list}(first: 2, after: "bm90IGEgY3Vyc29y") { edges { cursor } } }`, {}, asAdmin(org));
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'after' }] });
  });

  it('refuse a forged cursor whose values are of the wrong kinds, as not a cursor of the list', async () => {
    const forged = [
      [true, 'x'],
      [{ t: '2026-01-01T00:00:00.000Z' }, { t: '2026-01-01T00:00:00.000Z' }],
      [1, 2],
    ].map((values) => Buffer.from(JSON.stringify(values)).toString('base64url'));
    for (const cursor of forged) {
      for (const side of ['after', 'before']) {
        const res = await graphql(
          app,
          `{ ${list}(${side === 'after' ? 'first' : 'last'}: 2, ${side}: "${cursor}") { edges { cursor } } }`,
          {},
          asAdmin(org),
        );
        expect(res.body.errors?.[0]?.extensions, JSON.stringify(res.body)).toMatchObject({
          code: 'VALIDATION_FAILED',
          details: [{ path: side }],
        });
      }
    }
  });
});
