import { z } from 'zod';
import { loginInput, refreshInput } from '../../src/services/sessions.ts';
import type { RestRoute } from '../route.ts';

const SIGN_IN_FIELDS = 'accessToken refreshToken expiresAt user { id email firstName lastName }';

export const signInResult = z.object({
  accessToken: z.string(),
  refreshToken: z.string(),
  expiresAt: z.string(),
  user: z.object({ id: z.string(), email: z.string(), firstName: z.string().nullable(), lastName: z.string().nullable() }),
});

export const authRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/auth/login',
    summary: 'Sign in with email and password (first-party tooling). With X-Service-Org the tokens carry that organisation.',
    tag: 'Authentication',
    organisation: false,
    operation: `mutation Login($input: LoginInput!) { login(input: $input) { session { ${SIGN_IN_FIELDS} } } }`,
    body: loginInput,
    bind: { input: 'body' },
    result: (data) => data.login.session,
    response: signInResult,
    replay: 'never',
  },
  {
    method: 'POST',
    path: '/auth/refresh',
    summary: 'Rotate a refresh token. A reused refresh token is refused and its whole family revoked.',
    tag: 'Authentication',
    organisation: false,
    operation: `mutation Refresh($input: RefreshTokenInput!) { refreshTokens(input: $input) { tokens { accessToken refreshToken } } }`,
    body: refreshInput,
    bind: { input: 'body' },
    result: (data) => data.refreshTokens.tokens,
    replay: 'never',
    response: z.object({ accessToken: z.string(), refreshToken: z.string() }),
  },
  {
    method: 'POST',
    path: '/auth/logout',
    summary: 'Sign out: revoke the refresh token and every token of its family.',
    tag: 'Authentication',
    organisation: false,
    operation: `mutation Logout($input: RefreshTokenInput!) { logout(input: $input) { signedOut { success } } }`,
    body: refreshInput,
    bind: { input: 'body' },
    result: () => ({ success: true }),
    response: z.object({ success: z.boolean() }),
  },
];
