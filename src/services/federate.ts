import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  errors as joseErrors,
  jwtVerify,
  type FetchImplementation,
  type JWTPayload,
} from 'jose';
import { assertDeliverableUrl, deliverableLookup } from '../net/url-policy.ts';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { tenantDatabase } from '../db/tenant.ts';
import { AppError } from '../errors.ts';
import type { IdentityProvider, User } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { Runtime } from '../runtime.ts';
import { validate } from '../validation.ts';
import { issueSession, type SignInResult } from './sessions.ts';
import { changesBetween, recordAudit } from './audit.ts';
import { invitationRedeemed } from './invitations.ts';

/**
 * Sign-in with a token of an organisation's identity provider (POST /auth/federate): the ID or
 * access token (a JWT) is verified against the provider's published keys, then mapped to a user
 * of the provider's organisation. There is no self-sign-up: the person must already be a user
 * (active, or pending after an invitation).
 */

/** Asymmetric algorithms only: a provider's JWKS never holds a shared secret we could accept. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const CLOCK_TOLERANCE_SECONDS = 30;

export const federateInput = z.strictObject({
  token: z
    .string()
    .min(1)
    .max(16 * 1024),
});

type KeySet = ReturnType<typeof createRemoteJWKSet>;

/**
 * One remote key set per provider, so its keys are fetched once per cacheTtl rather than per
 * sign-in. Replaced when the provider's JWKS address or cacheTtl changes.
 */
const keySets = new Map<string, { url: string; cacheTtl: number; keys: KeySet }>();

function keySetOf(provider: IdentityProvider, allowPrivate: boolean): KeySet {
  const url = provider.jwksUriInternal ?? provider.jwksUri;
  const cached = keySets.get(provider.id);
  if (cached && cached.url === url && cached.cacheTtl === provider.cacheTtl) return cached.keys;
  const keys = createRemoteJWKSet(new URL(url), { cacheMaxAge: provider.cacheTtl * 1000, [customFetch]: pinnedFetch(allowPrivate) });
  if (keySets.size >= MAX_KEY_SETS) keySets.delete(keySets.keys().next().value!);
  keySets.set(provider.id, { url, cacheTtl: provider.cacheTtl, keys });
  return keys;
}

const MAX_KEY_SETS = 1000;
/** A JWKS is a few keys: anything bigger than this is not one. */
const MAX_JWKS_BYTES = 256 * 1024;

/**
 * How the service fetches a provider's keys: through the outbound URL policy at connection time
 * (the address connected to is the address checked, so a name that resolves to an internal address
 * later is refused too), no redirect (jose asks for `redirect: manual` and takes only a 200), and a
 * bounded body.
 */
function pinnedFetch(allowPrivate: boolean): FetchImplementation {
  const subject = 'The service does not send requests';
  const lookup = deliverableLookup(allowPrivate, subject);
  return async (url, options) => {
    // An address literal is never looked up at connection time: it is judged here.
    const target = await assertDeliverableUrl(url, { allowPrivate, subject });
    return new Promise<Response>((resolve, reject) => {
      const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
        target,
        { method: 'GET', headers: Object.fromEntries(options.headers), lookup, signal: options.signal },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_JWKS_BYTES) response.destroy(new Error('The JWKS response is too large.'));
            else chunks.push(chunk);
          });
          response.once('error', reject);
          response.once('end', () => resolve(new Response(Buffer.concat(chunks), { status: response.statusCode ?? 502 })));
        },
      );
      request.once('error', reject);
      request.end();
    });
  };
}

function refused(message: string): AppError {
  return new AppError('UNAUTHENTICATED', message);
}

/** The claims a verified token must carry for us. */
interface IdentityClaims extends JWTPayload {
  sub: string;
  email?: unknown;
  email_verified?: unknown;
  given_name?: unknown;
  family_name?: unknown;
}

async function verifyWith(provider: IdentityProvider, token: string, logger: Logger, allowPrivate: boolean): Promise<IdentityClaims> {
  const audience = provider.allowedClientIds.length > 0 ? provider.allowedClientIds : provider.clientId ? [provider.clientId] : [];
  if (audience.length === 0) throw refused('The identity provider has no client configured to accept tokens for.');
  try {
    const { payload } = await jwtVerify(token, keySetOf(provider, allowPrivate), {
      issuer: provider.issuer,
      audience,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['iss', 'sub', 'aud', 'exp'],
    });
    return payload as IdentityClaims;
  } catch (error) {
    const failure = verificationFailure(error);
    if (failure.code === 'UNAVAILABLE') {
      logger.warn({ identityProviderId: provider.id, err: error }, "the identity provider's JWKS could not be used");
    }
    throw failure;
  }
}

function verificationFailure(error: unknown): AppError {
  if (error instanceof joseErrors.JWTExpired) return refused('The token has expired.');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return refused('The token was issued to a client this organisation does not accept (audience).');
    if (error.claim === 'iss') return refused('The token was issued by another issuer.');
    if (error.claim === 'nbf' || error.claim === 'iat') return refused('The token is not valid yet.');
    return refused(`The token's "${error.claim}" claim is missing or invalid.`);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
    return refused("The token's signature does not verify with the identity provider's keys.");
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
    return refused('The token was signed with a key the identity provider does not publish.');
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) {
    return refused("The token's signing algorithm is not accepted.");
  }
  if (error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JWTInvalid) {
    return refused('The token is not a valid signed JWT.');
  }
  // The provider's keys could not be had (timeout, network, malformed JWKS): not the token's fault.
  return new AppError('UNAVAILABLE', "The identity provider's keys could not be fetched; try again later.");
}

function checkEmailDomain(provider: IdentityProvider, claims: IdentityClaims): void {
  if (!provider.emailDomain) return;
  const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : '';
  if (!email.endsWith(`@${provider.emailDomain.toLowerCase()}`)) {
    throw refused("The token's email is not in the organisation's email domain.");
  }
  if (claims.email_verified !== true) throw refused("The token's email is not verified by the identity provider.");
}

/** What a verified token maps to in the provider's organisation. */
interface Match {
  provider: IdentityProvider & { organisationId: string };
  claims: IdentityClaims;
  user: User;
  /** Whether the user is linked to this identity now (by email) rather than already. */
  link: boolean;
}

async function findUser(runtime: Runtime, provider: Match['provider'], claims: IdentityClaims): Promise<Match> {
  const db = tenantDatabase(runtime.db, provider.organisationId);
  const linked = await db.user.findFirst({ where: { identityProviderId: provider.id, externalUserId: claims.sub } });
  if (linked) {
    if (linked.status === 'disabled') throw refused('The user is disabled in this organisation.');
    return { provider, claims, user: linked, link: linked.status !== 'active' || linked.personId === null };
  }
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
  // An absent email_verified is not a verification: only `true` lets an email name a user.
  if (!email || claims.email_verified !== true) {
    throw refused('No user of the organisation is linked to this identity, and the token carries no verified email.');
  }
  const user = await db.user.findFirst({
    // Users' emails are stored lower-cased (invitations, bootstrap), like people's.
    where: { email, status: { in: ['active', 'pending'] } },
  });
  if (!user) throw refused('No user of the organisation has this email; ask an administrator for an invitation.');
  if (user.identityProviderId !== null) throw refused('The user with this email signs in with another identity.');
  return { provider, claims, user, link: true };
}

export async function federate(ctx: RequestContext, raw: { token: string }): Promise<SignInResult> {
  const { token } = validate(federateInput, raw);
  let unverified: JWTPayload;
  try {
    unverified = decodeJwt(token);
  } catch {
    throw refused('The token is not a JWT.');
  }
  const issuer = unverified.iss;
  if (typeof issuer !== 'string' || issuer === '') throw refused('The token names no issuer.');

  const noProvider = refused('No enabled identity provider trusts the issuer of this token.');
  // The issuer is unverified input: logged, but cut short.
  const loggedIssuer = issuer.slice(0, 200);
  // A named organisation that does not exist answers like one without such a provider.
  if (ctx.organisationSlug && !ctx.organisation) throw noProvider;
  // Unauthenticated and before any organisation is known: the one cross-organisation read here.
  const providers = await ctx.runtime.db.identityProvider.findMany({
    where: {
      issuer,
      isEnabled: true,
      organisationId: ctx.organisation ? ctx.organisation.id : { not: null },
    },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  if (providers.length === 0) {
    ctx.logger.info({ issuer: loggedIssuer }, 'federation refused: no enabled identity provider for the issuer');
    throw noProvider;
  }

  // Without X-Service-Org every organisation trusting the issuer is tried; one failing (even its
  // JWKS being unreachable) must not stop another from answering.
  const matches: Match[] = [];
  const failures: AppError[] = [];
  for (const provider of providers as Array<Match['provider']>) {
    try {
      const claims = await verifyWith(provider, token, ctx.logger, ctx.runtime.config.IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS);
      checkEmailDomain(provider, claims);
      matches.push(await findUser(ctx.runtime, provider, claims));
    } catch (error) {
      if (!(error instanceof AppError) || (error.code !== 'UNAUTHENTICATED' && error.code !== 'UNAVAILABLE')) throw error;
      ctx.logger.info({ issuer: loggedIssuer, identityProviderId: provider.id, reason: error.message }, 'federation refused');
      failures.push(error);
    }
  }
  if (matches.length === 0) {
    if (failures.length === 1 || failures.every((failure) => failure.code === 'UNAVAILABLE')) throw failures[0]!;
    // Several organisations' reasons would tell about their settings: answer none of them.
    throw refused('No organisation accepts this identity; name yours with X-Service-Org for the reason.');
  }
  if (matches.length > 1) {
    throw new AppError('ORG_REQUIRED', 'This identity is a user of several organisations: name one with X-Service-Org.');
  }
  const match = matches[0]!;
  const person = await signInAs(ctx, match);
  const tokens = await issueSession(ctx.runtime, ctx.runtime.db, person.id, match.provider.organisationId);
  return {
    ...tokens,
    user: { id: person.id, email: person.email, firstName: person.firstName, lastName: person.lastName },
  };
}

const optionalName = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim().slice(0, 255) : null);

const SIGN_IN_WITH_PASSWORD = refused(
  "This email belongs to an account that signs in with a password, not through this organisation's identity provider: sign in with the password.",
);

/**
 * The person behind the matched user. An organisation's own identity provider vouches for people
 * inside that organisation only: it may sign in, and create, persons of the organisation's realm
 * (Person.realm = its id), never a person of the global realm (one who proved control of the email
 * by a mailed code, and may belong to other organisations). So a tenant that configures a provider
 * asserting somebody else's email gets a separate person of its own, sees none of the real
 * person's organisations, and cannot reach them.
 *
 * Linking (first federation of an invited or existing user) records the identity on the user,
 * activates it, gives it a person of the realm, and redeems its open invitations, all in one
 * transaction.
 */
async function signInAs(ctx: RequestContext, match: Match) {
  const { runtime } = ctx;
  const { provider, claims, user } = match;
  const realm = provider.organisationId;
  if (!match.link) {
    const person = await runtime.db.person.findUnique({ where: { id: user.personId! } });
    if (!person) throw refused('The person of this user no longer exists.');
    if (person.realm !== realm) throw SIGN_IN_WITH_PASSWORD;
    return person;
  }
  const db = tenantDatabase(runtime.db, provider.organisationId);
  try {
    return await db.$transaction(async (tx) => {
      const email = user.email.toLowerCase();
      const own = user.personId ? await tx.person.findUnique({ where: { id: user.personId } }) : null;
      if (own && own.realm !== realm) throw SIGN_IN_WITH_PASSWORD;
      const person =
        own ??
        (await tx.person.upsert({
          where: { realm_email: { realm, email } },
          create: {
            id: newId('person'),
            realm,
            email,
            firstName: user.firstName ?? optionalName(claims.given_name),
            lastName: user.lastName ?? optionalName(claims.family_name),
          },
          update: {},
        }));
      const now = new Date();
      if (user.status === 'pending') {
        // The invitation is redeemed by signing in (its roles were granted to the pending user when
        // it was made). A pending user without one may sign in; one whose invitations lapsed may not.
        const open = await tx.invitation.findMany({ where: { userId: user.id, redeemedAt: null }, select: { expiresAt: true } });
        if (open.length > 0 && open.every((invitation) => invitation.expiresAt.getTime() <= now.getTime())) {
          throw new AppError('GONE', 'The invitation has expired; ask for a new one.');
        }
        const redeemed = await tx.invitation.updateManyAndReturn({
          where: { userId: user.id, redeemedAt: null, expiresAt: { gt: now } },
          data: { redeemedAt: now },
        });
        // Audited as redeeming its code is, by the user it made.
        for (const invitation of redeemed) await recordAudit(tx, ctx, invitationRedeemed(invitation, user.id, now));
      }
      // Guarded on the identity still being free, so two concurrent first sign-ins link once.
      const linked = await tx.user.updateMany({
        where: { id: user.id, OR: [{ identityProviderId: null }, { identityProviderId: provider.id, externalUserId: claims.sub }] },
        data: { identityProviderId: provider.id, externalUserId: claims.sub, status: 'active', personId: person.id },
      });
      if (linked.count === 0) throw refused('The user with this email signs in with another identity.');
      // The person signing in acts as the user they are linked to.
      await recordAudit(tx, ctx, {
        action: 'user.identity_linked',
        organisationId: provider.organisationId,
        actor: { kind: 'user', id: user.id },
        targetId: user.id,
        changes: changesBetween(
          { identityProviderId: user.identityProviderId ?? null, externalUserId: user.externalUserId ?? null, status: user.status },
          { identityProviderId: provider.id, externalUserId: claims.sub, status: 'active' },
        ),
      });
      return person;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw refused('This identity is already linked to another user of the organisation.');
    throw error;
  }
}
