import { randomBytes } from 'node:crypto';
import { bootstrapOrganisation, type BootstrapResult } from '../../src/services/bootstrap-organisation.ts';
import { appOf, type AppRef } from './app.ts';

export interface TestOrganisation extends BootstrapResult {
  slug: string;
  email: string;
  password: string;
  /** A staff access token of the first administrator, carrying this organisation. */
  adminToken: string;
}

/** An organisation made the way operators make one (the bootstrap service), signed in through the API. */
export async function createOrganisation(app: AppRef, prefix = 'org'): Promise<TestOrganisation> {
  const slug = `${prefix}-${randomBytes(4).toString('hex')}`;
  const email = `admin@${slug}.test`;
  const password = 'admin password 1';
  const result = await bootstrapOrganisation(appOf(app).runtime.db, { orgSlug: slug, orgName: `Org ${slug}`, email, password });
  const { accessToken } = await signIn(app, email, password, slug);
  return { ...result, slug, email, password, adminToken: accessToken };
}

export async function signIn(app: AppRef, email: string, password: string, slug?: string) {
  const res = await fetch(`${appOf(app).url}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(slug ? { 'x-service-org': slug } : {}) },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { accessToken: string; refreshToken: string; user: { id: string; email: string } };
}

/** A random string of letters, for unique names and emails. */
export const tag = () => randomBytes(4).toString('hex');

/** A JSON request to the API with the usual headers; answers status, headers and parsed body. */
export async function api(
  app: AppRef,
  method: string,
  path: string,
  options: { token?: string; org?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${appOf(app).url}${path}`, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.org ? { 'x-service-org': options.org } : {}),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

export async function graphql(
  app: AppRef,
  query: string,
  variables: Record<string, unknown> = {},
  options: { token?: string; org?: string; headers?: Record<string, string> } = {},
) {
  return api(app, 'POST', '/graphql', { ...options, body: { query, variables } });
}

/** A POST to /graphql with a raw JSON body and chosen headers; answers status, headers, parsed body and the raw text length. */
export async function postGraphql(
  app: AppRef,
  body: unknown,
  options: { token?: string; org?: string; headers?: Record<string, string>; raw?: string } = {},
) {
  const res = await fetch(`${appOf(app).url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.org ? { 'x-service-org': options.org } : {}),
      ...options.headers,
    },
    body: options.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed, length: text.length };
}

let clients = Math.floor(Math.random() * 30_000);
/** A client address (benchmarking range 198.18.0.0/15), distinct per call: sent as X-Forwarded-For (TRUST_PROXY=loopback believes it). */
export function newClientAddress(): string {
  clients += 1;
  return `198.18.${Math.floor(clients / 250) % 250}.${(clients % 250) + 1}`;
}

/** Sends as client `ip`. */
export const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** Another staff member of `org` holding `roleIds` on `accountId`, signed in. */
export async function createStaffUser(
  app: AppRef,
  org: TestOrganisation,
  roles: Array<{ roleId: string; accountId: string }>,
  label = 'staff',
) {
  const { hashPassword } = await import('../../src/auth/passwords.ts');
  const { newId } = await import('../../src/ids.ts');
  const db = appOf(app).runtime.db;
  const email = `${label}-${randomBytes(3).toString('hex')}@${org.slug}.test`;
  const password = 'staff password 1';
  const person = await db.person.create({ data: { id: newId('person'), email } });
  await db.passwordCredential.create({ data: { personId: person.id, passwordHash: await hashPassword(password) } });
  const user = await db.user.create({
    data: { id: newId('user'), organisationId: org.organisation.id, personId: person.id, email, status: 'active' },
  });
  const assignments = [];
  for (const role of roles) {
    assignments.push(
      await db.roleAssignment.create({
        data: { id: newId('roleAssignment'), organisationId: org.organisation.id, userId: user.id, ...role },
      }),
    );
  }
  const { accessToken } = await signIn(app, email, password, org.slug);
  return { personId: person.id, userId: user.id, email, password, token: accessToken, assignments };
}

export async function createAccount(app: AppRef, org: TestOrganisation, name = 'Second account') {
  const { newId } = await import('../../src/ids.ts');
  return appOf(app).runtime.db.account.create({ data: { id: newId('account'), organisationId: org.organisation.id, name } });
}

export type SystemRoleKey = 'organisation_admin' | 'account_admin' | 'event_manager' | 'viewer';

export function systemRole(org: TestOrganisation, key: SystemRoleKey): string {
  return org.roles.find((role) => role.systemKey === key)!.id;
}
