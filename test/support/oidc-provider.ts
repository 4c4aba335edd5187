import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
// @ts-expect-error oidc-provider 9 ships no type declarations; the few members used are typed below.
import ProviderClass from 'oidc-provider';

/**
 * A real OpenID provider (oidc-provider 9, the certified implementation) in this process, on
 * 127.0.0.1 and a free port, for tests of federation. Its interactions are a minimal handler of
 * ours (login with email and password, then consent), so tests drive the authorization-code flow
 * with PKCE over HTTP exactly as a browser would, and receive ID tokens signed with its own key.
 */

export interface TestAccount {
  /** The subject (sub) of this account's tokens. */
  accountId: string;
  email: string;
  password: string;
  emailVerified?: boolean;
  givenName?: string;
  familyName?: string;
}

export interface TestOidcProvider {
  issuer: string;
  jwksUri: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string;
  /** A public client: PKCE (S256) required, no client secret. */
  clientId: string;
  /** A second public client of the same provider: its tokens carry another audience. */
  otherClientId: string;
  redirectUri: string;
  /** The kid of the provider's signing key. */
  kid: string;
  addAccount(account: TestAccount): void;
  /** How many times the JWKS endpoint was requested. */
  jwksRequests(): number;
  /**
   * Signs a JWT with the provider's own signing key (same kid), for claims a real flow cannot
   * produce (an expired token, another issuer).
   */
  signWithProviderKey(claims: JWTPayload): Promise<string>;
  stop(): Promise<void>;
}

/** The body of POST /v1/identity-providers that registers `op` as an administrator would. */
export function providerRegistration(op: TestOidcProvider) {
  return {
    providerType: 'oidc',
    issuer: op.issuer,
    jwksUri: op.jwksUri,
    authorizationEndpoint: op.authorizationEndpoint,
    tokenEndpoint: op.tokenEndpoint,
    userinfoEndpoint: op.userinfoEndpoint,
    clientId: op.clientId,
  };
}

/** The members of oidc-provider's Provider this file uses. */
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: object, options?: object): Promise<void>;
  Grant: GrantClass;
  on(event: string, listener: (...args: unknown[]) => void): void;
}

interface Interaction {
  uid: string;
  prompt: { name: string; details: Record<string, unknown> };
  params: Record<string, string>;
  session?: { accountId: string };
  grantId?: string;
}

interface Grant {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}

interface GrantClass {
  new (init: { accountId: string; clientId: string }): Grant;
  find(id: string): Promise<Grant | undefined>;
}

const Provider = ProviderClass as new (issuer: string, configuration: object) => OidcProvider;

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

export async function startOidcProvider(options: { accounts?: TestAccount[] } = {}): Promise<TestOidcProvider> {
  const accounts = new Map<string, TestAccount>();
  for (const account of options.accounts ?? []) accounts.set(account.accountId, account);

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `test-${randomUUID()}`;
  const signingJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };

  let jwksRequests = 0;
  // Set below, once the provider exists; the server (and so its port, the issuer) comes first.
  // eslint-disable-next-line prefer-const
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => handle!(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = `test-client-${randomBytes(4).toString('hex')}`;
  const otherClientId = `other-client-${randomBytes(4).toString('hex')}`;
  // Nothing listens there: the flow stops at the redirect and reads the code from its Location.
  const redirectUri = 'http://127.0.0.1:9/callback';
  const publicClient = (id: string) => ({
    client_id: id,
    token_endpoint_auth_method: 'none',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  });

  const provider = new Provider(issuer, {
    clients: [publicClient(clientId), publicClient(otherClientId)],
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['given_name', 'family_name', 'name'],
    },
    // Put the requested claims (email, profile) in the ID token itself, which is what federation reads.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    ttl: { IdToken: 3600, AccessToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx: unknown, id: string) => {
      const account = accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: account.accountId,
        claims: async () => ({
          sub: account.accountId,
          email: account.email,
          email_verified: account.emailVerified ?? true,
          ...(account.givenName ? { given_name: account.givenName } : {}),
          ...(account.familyName ? { family_name: account.familyName } : {}),
        }),
      };
    },
  });
  const callback = provider.callback();

  /**
   * The login and consent pages: GET describes the prompt (JSON instead of HTML), POST
   * …/login checks email and password, POST …/confirm grants what the client asked for.
   */
  async function interactions(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const match = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(path);
    if (!match) return sendJson(res, 404, { error: 'not_found' });
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== match[1]) return sendJson(res, 400, { error: 'interaction mismatch' });
    const action = match[2];
    if (req.method === 'GET' && !action) {
      return sendJson(res, 200, { uid: details.uid, prompt: details.prompt.name, clientId: details.params.client_id });
    }
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'method_not_allowed' });
    if (action === 'login' && details.prompt.name === 'login') {
      const form = await readForm(req);
      const account = [...accounts.values()].find(
        (candidate) => candidate.email === form.get('email') && candidate.password === form.get('password'),
      );
      if (!account) return sendJson(res, 401, { error: 'wrong email or password' });
      return provider.interactionFinished(req, res, { login: { accountId: account.accountId } }, { mergeWithLastSubmission: false });
    }
    if (action === 'confirm' && details.prompt.name === 'consent') {
      const prompt = details.prompt.details as {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id! });
      if (prompt.missingOIDCScope) grant.addOIDCScope(prompt.missingOIDCScope.join(' '));
      if (prompt.missingOIDCClaims) grant.addOIDCClaims(prompt.missingOIDCClaims);
      for (const [resource, scopes] of Object.entries(prompt.missingResourceScopes ?? {})) {
        grant.addResourceScope(resource, scopes.join(' '));
      }
      const grantId = await grant.save();
      return provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
    }
    return sendJson(res, 400, { error: `cannot ${action} at prompt ${details.prompt.name}` });
  }

  handle = (req, res) => {
    const path = new URL(req.url ?? '/', issuer).pathname;
    if (path === '/jwks') jwksRequests++;
    if (path.startsWith('/interaction/')) {
      interactions(req, res, path).catch((error: Error) => sendJson(res, 500, { error: error.message }));
      return;
    }
    callback(req, res);
  };

  const signingKey = await importJWK(signingJwk, 'RS256');
  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    authorizationEndpoint: `${issuer}/auth`,
    tokenEndpoint: `${issuer}/token`,
    userinfoEndpoint: `${issuer}/me`,
    clientId,
    otherClientId,
    redirectUri,
    kid,
    addAccount(account) {
      accounts.set(account.accountId, account);
    },
    jwksRequests: () => jwksRequests,
    signWithProviderKey: (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(signingKey),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A cookie jar good enough for one provider on one origin (paths are ignored). */
class CookieJar {
  readonly #cookies = new Map<string, string>();

  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const expired = attributes.some((attribute) => /^\s*expires=.*1970/i.test(attribute));
      if (value === '' || expired) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
}

const base64url = (buffer: Buffer) => buffer.toString('base64url');

export interface FlowResult {
  idToken: string;
  accessToken: string;
  /** What happened on the way, for the test's assertions. */
  steps: string[];
}

/**
 * The authorization-code flow with PKCE (S256) over HTTP, as a browser and a public client do it:
 * GET /auth, the login and consent interactions (with the provider's cookies), the redirect with
 * the code, then POST /token with the code_verifier.
 */
export async function authorizationCodeFlow(
  op: TestOidcProvider,
  credentials: { email: string; password: string },
  options: { clientId?: string; scope?: string } = {},
): Promise<FlowResult> {
  const clientId = options.clientId ?? op.clientId;
  const jar = new CookieJar();
  const steps: string[] = [];
  const browse = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: jar.header() },
    });
    jar.store(response);
    steps.push(`${init.method ?? 'GET'} ${new URL(url).pathname} -> ${response.status}`);
    return response;
  };
  const locationOf = (response: Response) => {
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      throw new Error(`expected a redirect, got ${response.status}; steps: ${steps.join(', ')}`);
    }
    return new URL(location, op.issuer).toString();
  };

  const codeVerifier = base64url(randomBytes(32));
  const codeChallenge = base64url(createHash('sha256').update(codeVerifier).digest());
  const state = base64url(randomBytes(16));
  const nonce = base64url(randomBytes(16));
  const authorize = new URL(op.authorizationEndpoint);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: op.redirectUri,
    scope: options.scope ?? 'openid email profile',
    code_challenge: codeChallenge,
    code_challenge_method: 'S256',
    state,
    nonce,
  }).toString();

  let location = locationOf(await browse(authorize.toString()));
  for (let hop = 0; !location.startsWith(op.redirectUri); hop++) {
    if (hop > 10) throw new Error(`too many redirects; steps: ${steps.join(', ')}`);
    const path = new URL(location).pathname;
    if (!path.startsWith('/interaction/')) {
      location = locationOf(await browse(location));
      continue;
    }
    const page = await browse(location);
    const { prompt } = (await page.json()) as { prompt: string };
    const form = prompt === 'login' ? new URLSearchParams(credentials) : new URLSearchParams();
    location = locationOf(
      await browse(`${location}/${prompt === 'login' ? 'login' : 'confirm'}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      }),
    );
  }

  const callback = new URL(location);
  if (callback.searchParams.get('error')) {
    throw new Error(`authorization failed: ${callback.searchParams.get('error')} ${callback.searchParams.get('error_description')}`);
  }
  if (callback.searchParams.get('state') !== state) throw new Error('state mismatch');
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code in ${location}`);

  const tokenResponse = await fetch(op.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: op.redirectUri,
      code_verifier: codeVerifier,
      client_id: clientId,
    }).toString(),
  });
  steps.push(`POST /token -> ${tokenResponse.status}`);
  const tokens = (await tokenResponse.json()) as { id_token?: string; access_token?: string; error?: string; error_description?: string };
  if (!tokenResponse.ok || !tokens.id_token) {
    throw new Error(`token request failed: ${tokenResponse.status} ${tokens.error} ${tokens.error_description}`);
  }
  return { idToken: tokens.id_token, accessToken: tokens.access_token!, steps };
}
