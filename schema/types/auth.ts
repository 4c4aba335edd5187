import { login, loginInput, logout, refresh, refreshInput, type SignInResult, type SessionTokens } from '../../src/services/sessions.ts';
import { AppError } from '../../src/errors.ts';
import { builder } from '../builder.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';
import { SuccessResult } from './common.ts';
import { Person } from './person.ts';

export const SessionTokensRef = builder.objectRef<SessionTokens>('SessionTokens').implement({
  description: 'A new access token and the refresh token that replaces the one used.',
  fields: (t) => ({
    accessToken: t.exposeString('accessToken', { description: 'Short-lived JWT for Authorization: Bearer.' }),
    refreshToken: t.exposeString('refreshToken', { description: 'Single-use token for the next refresh.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'When the access token expires.' }),
  }),
});

export const SignInResultRef = builder.objectRef<SignInResult>('SignInResult').implement({
  description: 'Tokens for a new session and the person it belongs to.',
  fields: (t) => ({
    accessToken: t.exposeString('accessToken', {
      description: 'Short-lived JWT; carries the organisation when one was chosen (X-Service-Org).',
    }),
    refreshToken: t.exposeString('refreshToken', { description: 'Single-use token that renews the session.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', description: 'When the access token expires.' }),
    user: t.field({ type: Person, description: 'The person signed in.', resolve: (r) => r.user }),
  }),
});

const LoginInput = inputFrom('LoginInput', loginInput, {
  description: 'Password sign-in.',
  fields: {
    email: 'Sign-in email.',
    password: 'Password (at least 1 character).',
  },
});

const RefreshInput = inputFrom('RefreshTokenInput', refreshInput, {
  description: 'A refresh token.',
  fields: {
    refreshToken: 'The refresh token from the last sign-in or refresh.',
  },
});

builder.mutationFields((t) => ({
  login: t.field({
    ...payload('Login', 'session', SignInResultRef, 'The new session: its tokens and the person signed in.'),
    description: 'Password sign-in for first-party tooling (POST /v1/auth/login). With X-Service-Org the tokens carry that organisation.',
    authScopes: { public: true },
    args: { input: t.arg({ type: LoginInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      answer(ctx, () => {
        // A named organisation that does not exist is refused like one the person is not in.
        if (ctx.organisationSlug && !ctx.organisation) throw new AppError('ORG_MISMATCH');
        return login(ctx.runtime, ctx.organisation, input, ctx.clientIp);
      }),
  }),
  refreshTokens: t.field({
    ...payload('RefreshTokens', 'tokens', SessionTokensRef, 'The new access token and refresh token.'),
    description: 'Rotates a refresh token (POST /v1/auth/refresh). Reusing one revokes its whole family.',
    authScopes: { public: true },
    args: { input: t.arg({ type: RefreshInput, required: true }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => refresh(ctx.runtime, input)),
  }),
  logout: t.field({
    ...payload('Logout', 'signedOut', SuccessResult, 'The outcome of the sign-out.'),
    description: 'Signs out: revokes the refresh token and every token of its family (POST /v1/auth/logout).',
    authScopes: { public: true },
    args: { input: t.arg({ type: RefreshInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      answer(ctx, async () => {
        await logout(ctx.runtime, input);
        return { success: true };
      }),
  }),
}));
