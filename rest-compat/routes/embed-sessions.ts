import { z } from 'zod';
import { createEmbedSessionInput } from '../../src/services/embed-sessions.ts';
import type { RestRoute } from '../route.ts';

/** The organisation answers its id as `organisationId` (its `id` would be the Organisation's): aliased back to `id`. */
const ORGANISATION_FIELDS = 'id: organisationId slug';
const organisation = z.object({ id: z.string(), slug: z.string() });

export const embedSessionsRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/embed/sessions',
    summary: 'Mint an embed session token pinned to one account (callable with an organisation API key).',
    tag: 'Embed sessions',
    organisation: true,
    operation: `mutation CreateEmbedSession($input: CreateEmbedSessionInput) {
      createEmbedSession(input: $input) { embedSession { token expiresAt accountId organisation { ${ORGANISATION_FIELDS} } } }
    }`,
    body: createEmbedSessionInput,
    bind: { input: 'body' },
    result: (data) => data.createEmbedSession.embedSession,
    replay: {
      secrets: ['token'],
      readWith: () => 'An embed session is read only with its token: if the token was lost, mint another.',
    },
    status: 201,
    response: z.object({ token: z.string(), expiresAt: z.string(), accountId: z.string(), organisation }),
  },
  {
    method: 'GET',
    path: '/embed/sessions/current',
    summary: 'The embed session of the calling embed token.',
    tag: 'Embed sessions',
    organisation: true,
    operation: `query CurrentEmbedSession { currentEmbedSession { organisation { ${ORGANISATION_FIELDS} } accountId scopes expiresAt } }`,
    result: (data) => data.currentEmbedSession,
    response: z.object({ organisation, accountId: z.string(), scopes: z.array(z.string()), expiresAt: z.string() }),
  },
];
