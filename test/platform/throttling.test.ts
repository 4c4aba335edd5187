import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { startTwoApps, type AppPair, type TestApp } from '../support/app.ts';
import { magicLinkCode } from '../support/credentials.ts';
import {
  api,
  createOrganisation,
  createStaffUser,
  from,
  graphql,
  newClientAddress,
  systemRole,
  tag,
  type TestOrganisation,
} from '../support/fixtures.ts';
import { mailedInvitationCode } from '../support/mail.ts';
import { createChannel } from '../support/sales.ts';
import { freshMinute } from '../support/clock.ts';

/**
 * Guessing is throttled, and the counts hold across API processes (kept in
 * PostgreSQL). Every test alternates its requests between two API processes on one database.
 * Decided: password sign-in per email 5 failures free, per client address 20, then a wait of
 * 2^(n-5) s after the last failure during which ANY attempt answers 429 RATE_LIMITED with
 * Retry-After; a success clears the email's count. Invitation redemption and customer-token
 * exchange: per client address, the same. Magic-link requests: 10 a minute per key and address.
 * Clients are told apart by X-Forwarded-For (TRUST_PROXY=loopback).
 */

let pair: AppPair;
let org: TestOrganisation;

beforeAll(async () => {
  pair = await startTwoApps();
  org = await createOrganisation(pair.a, 'throttle');
});
afterAll(async () => {
  await pair?.stop();
});

/** The process for the i-th request: a, b, a, b, … */
const processFor = (i: number): TestApp => (i % 2 === 0 ? pair.a : pair.b);

function expectThrottled(res: { status: number; headers: Headers; body: any }) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 429, code: 'RATE_LIMITED' });
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(900);
}

const login = (app: TestApp, email: string, password: string, ip: string) =>
  api(app, 'POST', '/v1/auth/login', { body: { email, password }, headers: from(ip) });

describe('password sign-in', () => {
  it('per email: after 5 failures (REST and GraphQL, from rotating addresses, on both processes) even the right password answers 429 with Retry-After', async () => {
    const victim = await createStaffUser(pair.a, org, [], 'victim');
    for (let i = 0; i < 5; i += 1) {
      const app = processFor(i);
      const ip = newClientAddress();
      if (i % 3 === 2) {
        const gql = await graphql(app, 'mutation($input: LoginInput!) { login(input: $input) { session { accessToken } } }', {
          input: { email: victim.email, password: `guess ${i}` },
        });
        expect(gql.body.errors?.[0]?.extensions?.code, `attempt ${i}`).toBe('UNAUTHENTICATED');
      } else {
        expect((await login(app, victim.email, `guess ${i}`, ip)).status, `attempt ${i}`).toBe(401);
      }
    }

    expectThrottled(await login(pair.b, victim.email, victim.password, newClientAddress()));
    expectThrottled(await login(pair.a, victim.email, victim.password, newClientAddress()));
    // Another person is not locked out by it.
    const bystander = await createStaffUser(pair.a, org, [], 'bystander');
    expect((await login(pair.b, bystander.email, bystander.password, newClientAddress())).status).toBe(200);
  });

  it('a success clears the count: 4 failures, a success, then 5 more failures before the right password is refused', async () => {
    const person = await createStaffUser(pair.a, org, [], 'clears');
    const ip = newClientAddress();
    for (let i = 0; i < 4; i += 1) expect((await login(processFor(i), person.email, `wrong ${i}`, ip)).status).toBe(401);
    expect((await login(pair.b, person.email, person.password, ip)).status).toBe(200);
    for (let i = 0; i < 5; i += 1)
      expect((await login(processFor(i), person.email, `wrong again ${i}`, ip)).status, `attempt ${i}`).toBe(401);

    expectThrottled(await login(pair.b, person.email, person.password, ip));
  });

  it('per client address: after 20 failures on 20 different emails, the address is refused even for a real account; other addresses are not', async () => {
    const real = await createStaffUser(pair.a, org, [], 'real');
    const attacker = newClientAddress();
    for (let i = 0; i < 20; i += 1) {
      const res = await login(processFor(i), `nobody-${i}-${tag()}@throttle.test`, 'password guess', attacker);
      expect(res.status, `attempt ${i}`).toBe(401);
    }

    expectThrottled(await login(pair.a, real.email, real.password, attacker));
    expect((await login(pair.b, real.email, real.password, newClientAddress())).status).toBe(200);
  });
});

describe('invitation redemption', () => {
  it('per client address: after 20 unknown codes, even a valid code answers 429; from another address it redeems', async () => {
    const email = `invitee-${tag()}@throttle.test`;
    const created = await api(pair.a, 'POST', '/v1/user-invitations', {
      token: org.adminToken,
      org: org.slug,
      body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'viewer')] },
    });
    expect(created.status).toBe(201);
    const code = await mailedInvitationCode(pair.a, created.body.invitation.id);
    const redeem = (app: TestApp, guess: string, ip: string) =>
      api(app, 'POST', '/v1/auth/invitations/redeem', { body: { code: guess, password: 'a long password' }, headers: from(ip) });

    const attacker = newClientAddress();
    for (let i = 0; i < 20; i += 1) {
      const res = await redeem(processFor(i), `guess-${i}-${tag()}`, attacker);
      // 5 failures are free whatever the per-address allowance; 20 is the decided one.
      if (i < 5) expect(res.status, `attempt ${i}`).toBe(404);
      else expect([404, 429], `attempt ${i}`).toContain(res.status);
    }

    expectThrottled(await redeem(pair.b, code, attacker));
    const genuine = await redeem(pair.a, code, newClientAddress());
    expect(genuine.status).toBe(200);
    expect(genuine.body.user.email).toBe(email);
  });
});

describe('customer sign-in on the sales API', () => {
  it('customer tokens, per client address: after 20 unknown codes a valid code answers 429; from another address it works', async () => {
    const { publishable } = await createChannel(pair.a, org);
    const email = `shopper-${tag()}@throttle.test`;
    await pair.a.runtime.db.customer.create({
      data: { id: newId('customer'), organisationId: org.organisation.id, accountId: org.account.id, email },
    });
    const sales = (app: TestApp, path: string, body: unknown, ip: string) =>
      api(app, 'POST', `/live${path}`, { body, headers: { 'x-channel-key': publishable, ...from(ip) } });
    expect((await sales(pair.a, '/sales/customer-auth/magic-link', { email }, newClientAddress())).status).toBe(202);
    const code = await magicLinkCode(pair.a, email);

    const attacker = newClientAddress();
    for (let i = 0; i < 20; i += 1) {
      const res = await sales(processFor(i), '/sales/customer-tokens', { code: `guess-${i}-${tag()}` }, attacker);
      if (i < 5) expect(res.status, `attempt ${i}`).toBe(401);
      else expect([401, 429], `attempt ${i}`).toContain(res.status);
    }

    expectThrottled(await sales(pair.b, '/sales/customer-tokens', { code }, attacker));
    const genuine = await sales(pair.a, '/sales/customer-tokens', { code }, newClientAddress());
    expect(genuine.status).toBe(201);
    expect(genuine.body.customer.email).toBe(email);
  });

  it('magic-link requests: 10 a minute per publishable key and address, counted across both processes', async () => {
    const { publishable } = await createChannel(pair.a, org);
    const ip = newClientAddress();
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof api>> | undefined;
    // Eleven requests within one clock-aligned minute.
    await freshMinute();
    for (let i = 0; i < 11; i += 1) {
      last = await api(processFor(i), 'POST', '/live/sales/customer-auth/magic-link', {
        body: { email: `someone-${i}@throttle.test` },
        headers: { 'x-channel-key': publishable, ...from(ip) },
      });
      statuses.push(last.status);
    }

    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(202));
    expectThrottled(last!);
    const otherAddress = await api(pair.b, 'POST', '/live/sales/customer-auth/magic-link', {
      body: { email: 'someone@throttle.test' },
      headers: { 'x-channel-key': publishable, ...from(newClientAddress()) },
    });
    expect(otherAddress.status).toBe(202);
  });
});
