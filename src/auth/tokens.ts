import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { SigningKeys } from './keys.ts';

const ISSUER = 'ticketing-service';
const AUDIENCE = 'ticketing-management';

export interface AccessClaims {
  typ: 'access';
  /** Person id. */
  sub: string;
  /** Organisation chosen at sign-in, when one was. */
  org?: string;
}

export interface EmbedClaims {
  typ: 'embed';
  /** Embed session id. */
  sub: string;
  org: string;
  acc: string;
  scopes: string[];
}

/** A storefront customer signed in by magic link (sales API only). */
export interface CustomerClaims {
  typ: 'customer';
  /** Customer id (cus_). */
  sub: string;
  org: string;
  acc: string;
}

export type TokenClaims = AccessClaims | EmbedClaims | CustomerClaims;

/** Signs and verifies the service's own JWTs (HS256 with a `kid`, so keys rotate). */
/** Verified tokens, kept until they expire: a token's claims never change once signed. */
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenService {
  #verified = new Map<string, TokenClaims & { exp: number }>();

  constructor(
    readonly keys: SigningKeys,
    readonly accessTtlMs: number,
  ) {}

  async sign(claims: TokenClaims, expiresAt: Date): Promise<string> {
    const { sub, ...rest } = claims;
    return new SignJWT(rest)
      .setProtectedHeader({ alg: 'HS256', kid: this.keys.current.kid, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(sub)
      .setJti(newId('request').slice(4))
      .setIssuedAt()
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .sign(this.keys.current.secret);
  }

  async signAccess(personId: string, organisationId: string | undefined): Promise<{ token: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + this.accessTtlMs);
    const claims: AccessClaims = { typ: 'access', sub: personId, ...(organisationId ? { org: organisationId } : {}) };
    return { token: await this.sign(claims, expiresAt), expiresAt };
  }

  /** A customer token for the sales API (GET /live/sales/me/orders). */
  async signCustomer(
    customer: { id: string; organisationId: string; accountId: string },
    ttlMs: number,
  ): Promise<{ token: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + ttlMs);
    const claims: CustomerClaims = { typ: 'customer', sub: customer.id, org: customer.organisationId, acc: customer.accountId };
    return { token: await this.sign(claims, expiresAt), expiresAt };
  }

  /** Verifies signature, issuer, audience and expiry; any failure is 401 UNAUTHENTICATED. */
  async verify(token: string): Promise<TokenClaims & { exp: number }> {
    const known = this.#verified.get(token);
    if (known) {
      if (known.exp * 1000 > Date.now()) return known;
      this.#verified.delete(token);
      throw new AppError('UNAUTHENTICATED', 'The token has expired.');
    }
    const claims = await this.#verify(token);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, claims);
    return claims;
  }

  async #verify(token: string): Promise<TokenClaims & { exp: number }> {
    try {
      const { payload } = await jwtVerify(
        token,
        (header) => {
          const key = header.kid ? this.keys.byKid.get(header.kid) : undefined;
          if (!key) throw new AppError('UNAUTHENTICATED', 'The token was signed with an unknown key.');
          return key.secret;
        },
        { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] },
      );
      if (!['access', 'embed', 'customer'].includes(payload.typ as string) || typeof payload.sub !== 'string') {
        throw new AppError('UNAUTHENTICATED', 'The token is not a token of this service.');
      }
      return payload as unknown as TokenClaims & { exp: number };
    } catch (error) {
      if (error instanceof AppError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new AppError('UNAUTHENTICATED', 'The token has expired.');
      throw new AppError('UNAUTHENTICATED', 'The token is invalid.');
    }
  }
}
