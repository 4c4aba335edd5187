import { z } from 'zod';
import { mintKey, sha256 } from '../auth/keys.ts';
import { hashPassword, verifyPassword } from '../auth/passwords.ts';
import type { Database } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { validate } from '../validation.ts';
import type { Organisation } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { clientBucket, type ThrottleSubject } from '../limits/rate-limiter.ts';
import type { Runtime } from '../runtime.ts';

export interface SignedInUser {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
}

export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires. */
  expiresAt: Date;
}

export interface SignInResult extends SessionTokens {
  user: SignedInUser;
}

/** A verifier's worth of work for unknown emails, so timing does not tell which emails exist. */
let dummyHash: Promise<string> | undefined;

/**
 * Issues an access token (carrying the organisation when one was chosen) and a refresh token
 * starting a new family, or continuing `familyId` on rotation.
 */
export async function issueSession(
  runtime: Runtime,
  db: Database,
  personId: string,
  organisationId: string | null,
  familyId = newId('refreshToken'),
): Promise<SessionTokens> {
  const { key: refreshToken, keyHash: tokenHash } = mintKey('svrt_');
  await db.refreshToken.create({
    data: {
      id: newId('refreshToken'),
      personId,
      organisationId,
      familyId,
      tokenHash,
      expiresAt: new Date(Date.now() + runtime.config.REFRESH_TOKEN_TTL),
    },
  });
  const access = await runtime.tokens.signAccess(personId, organisationId ?? undefined);
  return { accessToken: access.token, refreshToken, expiresAt: access.expiresAt };
}

export const loginInput = z.strictObject({
  email: z.email().transform((e) => e.toLowerCase()),
  password: z.string().min(1),
});

/**
 * What a failed password check counts against: the email (5 failures free), whoever tries it, and the
 * client address (20 free: one address guessing many emails), kept in PostgreSQL so every API
 * process counts them (src/limits/rate-limiter.ts).
 */
export function signInThrottle(email: string, clientIp: string): ThrottleSubject[] {
  return [
    { limit: 'sign-in:email', subject: email, free: 5 },
    { limit: 'sign-in:address', subject: clientBucket(clientIp), free: 20 },
  ];
}

/**
 * Password sign-in (first-party tooling). With an organisation (X-Service-Org) the person must be
 * an active user of it, and the tokens carry it. Throttled: after a few wrong passwords for an email
 * (or from an address) every further attempt waits, the right password included.
 */
export async function login(
  runtime: Runtime,
  organisation: Organisation | null,
  raw: { email: string; password: string },
  clientIp: string,
): Promise<SignInResult> {
  const input = validate(loginInput, raw);
  const throttle = signInThrottle(input.email, clientIp);
  await runtime.throttle.assertAllowed(throttle);
  const person = await runtime.db.person.findUnique({
    where: { realm_email: { realm: 'global', email: input.email } },
    include: { credential: true },
  });
  if (!person?.credential) {
    dummyHash ??= hashPassword('not a real password');
    await verifyPassword(await dummyHash, input.password);
    await runtime.throttle.fail(throttle);
    throw new AppError('UNAUTHENTICATED', 'The email or password is wrong.');
  }
  if (!(await verifyPassword(person.credential.passwordHash, input.password))) {
    await runtime.throttle.fail(throttle);
    throw new AppError('UNAUTHENTICATED', 'The email or password is wrong.');
  }
  await runtime.throttle.clear(throttle[0]!);
  if (organisation) {
    const member = await runtime.db.user.findFirst({
      where: { organisationId: organisation.id, personId: person.id, status: 'active' },
      select: { id: true },
    });
    if (!member) throw new AppError('ORG_MISMATCH');
  }
  const tokens = await issueSession(runtime, runtime.db, person.id, organisation?.id ?? null);
  return { ...tokens, user: { id: person.id, email: person.email, firstName: person.firstName, lastName: person.lastName } };
}

export const refreshInput = z.strictObject({ refreshToken: z.string().min(1) });

/**
 * Rotates a refresh token. A token used twice means it leaked: the whole family (every token of
 * that sign-in) is revoked and the request refused.
 */
export async function refresh(runtime: Runtime, raw: { refreshToken: string }): Promise<SessionTokens> {
  const { refreshToken } = validate(refreshInput, raw);
  const tokenHash = sha256(refreshToken);
  const outcome = await runtime.db.$transaction(async (tx) => {
    const stored = await tx.refreshToken.findUnique({ where: { tokenHash } });
    if (!stored) throw new AppError('UNAUTHENTICATED', 'Unknown refresh token.');
    if (stored.revokedAt) throw new AppError('UNAUTHENTICATED', 'The refresh token has been revoked.');
    if (stored.expiresAt.getTime() <= Date.now()) throw new AppError('UNAUTHENTICATED', 'The refresh token has expired.');
    // Claim the token atomically: of two concurrent uses, only one sees usedAt still null.
    const claimed = await tx.refreshToken.updateMany({ where: { id: stored.id, usedAt: null }, data: { usedAt: new Date() } });
    if (claimed.count === 0) return { reusedFamily: stored.familyId, tokens: undefined };
    if (stored.organisationId) {
      const member = await tx.user.findFirst({
        where: { organisationId: stored.organisationId, personId: stored.personId, status: 'active' },
        select: { id: true },
      });
      if (!member) throw new AppError('UNAUTHENTICATED', 'The person is no longer a user of that organisation.');
    }
    const tokens = await issueSession(runtime, tx as Database, stored.personId, stored.organisationId, stored.familyId);
    return { reusedFamily: undefined, tokens };
  });
  if (outcome.reusedFamily !== undefined) {
    await revokeFamily(runtime.db, outcome.reusedFamily);
    throw new AppError('UNAUTHENTICATED', 'The refresh token was already used; every session of that sign-in is revoked.');
  }
  return outcome.tokens;
}

/** After (never inside) the rotation's transaction, so the revocation stays although the request fails. */
async function revokeFamily(db: Database, familyId: string): Promise<void> {
  await db.refreshToken.updateMany({ where: { familyId, revokedAt: null }, data: { revokedAt: new Date() } });
}

/** Sign-out: revokes the refresh token's family. Unknown tokens are not an error (idempotent). */
export async function logout(runtime: Runtime, raw: { refreshToken: string }): Promise<void> {
  const { refreshToken } = validate(refreshInput, raw);
  const stored = await runtime.db.refreshToken.findUnique({ where: { tokenHash: sha256(refreshToken) } });
  if (stored) await revokeFamily(runtime.db, stored.familyId);
}
