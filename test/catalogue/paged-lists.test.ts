import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, createStaffUser, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';

/**
 * Every /v1 list pages the same way: page and limit (1-100) in the query string,
 * `pagination` in the answer; these five used to answer everything at once.
 */
// Identity providers on example.com: no DNS here, so the outbound URL policy is told to allow what it cannot resolve.
const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let org: TestOrganisation;
let auth: { token: string; org: string };

beforeAll(async () => {
  org = await createOrganisation(app, 'paged');
  auth = { token: org.adminToken, org: org.slug };
  // Two or more of each list's items.
  await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }], 'second');
  for (let i = 0; i < 2; i += 1) {
    const key = await api(app, 'POST', '/v1/api-keys', { ...auth, body: { name: `Key ${i}`, scopes: ['events.read'] } });
    expect(key.status).toBe(201);
    const endpoint = await api(app, 'POST', '/v1/webhook-endpoints', {
      ...auth,
      body: { accountId: org.account.id, url: `https://hooks${i}.example.com/in` },
    });
    expect(endpoint.status).toBe(201);
    const provider = await api(app, 'POST', '/v1/identity-providers', {
      ...auth,
      body: {
        providerType: 'oidc',
        issuer: `https://id${i}.paged.example.com`,
        jwksUri: `https://id${i}.paged.example.com/jwks`,
        clientId: 'x',
      },
    });
    expect(provider.status).toBe(201);
  }
});

const LISTS = [
  { path: '/v1/roles', key: 'roles' },
  { path: '/v1/user-account-roles', key: 'assignments' },
  { path: '/v1/api-keys', key: 'apiKeys' },
  { path: '/v1/webhook-endpoints', key: 'endpoints' },
  { path: '/v1/identity-providers', key: 'providers' },
] as const;

describe.each(LISTS)('GET $path', ({ path, key }) => {
  it('answers pagination with the default page, and pages with page and limit', async () => {
    const all = await api(app, 'GET', path, auth);
    expect(all.status).toBe(200);
    const total = all.body[key].length as number;
    expect(total).toBeGreaterThanOrEqual(2);
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total, totalPages: 1, hasNext: false, hasPrev: false });

    const first = await api(app, 'GET', `${path}?limit=1`, auth);
    const second = await api(app, 'GET', `${path}?page=2&limit=1`, auth);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(first.body[key]).toEqual([all.body[key][0]]);
    expect(second.body[key]).toEqual([all.body[key][1]]);
    expect(second.body.pagination).toEqual({ page: 2, limit: 1, total, totalPages: total, hasNext: total > 2, hasPrev: true });
  });

  it('refuses a limit outside 1-100 and a page below 1, naming the parameter', async () => {
    for (const query of ['limit=0', 'limit=101', 'page=0', 'limit=ten']) {
      const res = await api(app, 'GET', `${path}?${query}`, auth);
      expect([res.status, res.body.code, res.body.details?.[0]?.path], query).toEqual([
        400,
        'VALIDATION_FAILED',
        `query.${query.split('=')[0]}`,
      ]);
    }
  });
});

describe('GraphQL', () => {
  it('pages the same lists as connections, with the Relay arguments only', async () => {
    const res = await graphql(
      app,
      `
        {
          roles(first: 1) {
            nodes {
              id
            }
            pagination {
              total
            }
          }
          roleAssignments(first: 1) {
            edges {
              node {
                id
              }
            }
            pageInfo {
              hasNextPage
            }
          }
          apiKeys(first: 1) {
            nodes {
              id
            }
            pagination {
              total
            }
          }
          webhookEndpoints(first: 1) {
            nodes {
              id
            }
            pagination {
              total
            }
          }
          identityProviders(first: 1) {
            nodes {
              id
            }
            pagination {
              total
            }
          }
        }
      `,
      {},
      auth,
    );
    expect(res.body.errors).toBeUndefined();
    const data = res.body.data;
    for (const field of ['roles', 'apiKeys', 'webhookEndpoints', 'identityProviders']) {
      expect(data[field].nodes, field).toHaveLength(1);
      expect(data[field].pagination.total, field).toBeGreaterThanOrEqual(2);
    }
    expect(data.roleAssignments.edges).toHaveLength(1);
    expect(data.roleAssignments.pageInfo.hasNextPage).toBe(true);
    const pageArgs = await graphql(app, '{ roles(page: 2, limit: 1) { nodes { id } } }', {}, auth);
    expect(pageArgs.body.errors[0].message).toMatch(/Unknown argument "page"/);
  });
});
