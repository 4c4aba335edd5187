import type { ObjectRef } from '@pothos/core';
import { DEFAULT_LIMIT, MAX_LIMIT, paginationOf, type Page, type PaginationInfo } from '../src/pagination.ts';
import { builder } from './builder.ts';

/**
 * Lists are Relay connections in GraphQL (first/after and last/before, keyset cursors) that also take page/limit, the
 * /v1 pagination, and answer `pagination` beside `edges` and `pageInfo`. The window and the page
 * are computed by src/pagination.ts; this module holds only their GraphQL types.
 */

export const Pagination = builder.objectRef<PaginationInfo>('Pagination').implement({
  description: 'Where a page sits in a list.',
  fields: (t) => ({
    page: t.exposeInt('page', { description: 'This page, from 1.' }),
    limit: t.exposeInt('limit', { description: 'Items per page (1 to 100).' }),
    total: t.exposeInt('total', { description: 'Items in the whole list.' }),
    totalPages: t.exposeInt('totalPages', { description: 'Pages in the whole list (0 when it is empty).' }),
    hasNext: t.exposeBoolean('hasNext', { description: 'Whether a later page exists.' }),
    hasPrev: t.exposeBoolean('hasPrev', { description: 'Whether an earlier page exists.' }),
  }),
});

/**
 * A connection type whose objects carry `pagination` and `nodes` beside edges and pageInfo.
 */
export function pagedConnection<T>(type: ObjectRef<typeof builder.$inferSchemaTypes, T>, name: string, what: string) {
  return builder.connectionObject(
    {
      type,
      name,
      description: `A page of ${what}.`,
      fields: (t) => ({
        pagination: t.field({
          type: Pagination,
          description: 'Page position and totals.',
          resolve: (connection) => paginationOf(connection as unknown as Page<T>),
        }),
        totalCount: t.int({
          description: `All the ${what} of the list, on every page: counted with the page, at no further cost.`,
          resolve: (connection) => (connection as unknown as Page<T>).total,
        }),
        nodes: t.field({
          type: [type],
          description: `The ${what} of this page (the edges' nodes).`,
          resolve: (connection) => (connection as unknown as Page<T>).nodes as never,
        }),
      }),
    },
    { name: `${name.replace(/Connection$/, '')}Edge`, description: `One of the ${what}.` },
  );
}

/**
 * The mark of a filter argument only /v1 and /live pass, in their contract's shape: the schema
 * /graphql serves leaves it out (schema/public.ts), where a typed argument takes its place. (Their
 * page/limit on connections are left out there too, by the connection rule.)
 */
export const REST_ONLY = { restOnly: true } as const;

/** page/limit arguments for list fields, beside the Relay ones. */
export function pageArgsFor<Arg>(t: { arg: { int: (options: { description: string }) => Arg } }): { page: Arg; limit: Arg } {
  return {
    page: t.arg.int({ description: 'Page number from 1 (default 1), with limit; not with cursors.' }),
    limit: t.arg.int({ description: `Items per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}).` }),
  };
}

/**
 * `updatedSince` of a list an admin screen polls: `rows` says which rows count as changed (and
 * `note`, in brackets, what does not), so every list words the same promise the same way.
 */
export function updatedSinceArg<Arg>(
  t: { arg: (options: { type: 'DateTime'; description: string }) => Arg },
  rows: string,
  note?: string,
): Arg {
  return t.arg({
    type: 'DateTime',
    description: `Only ${rows} at or after this instant${note ? ` (${note})` : ''}, for a screen that polls. Cursors stay valid with or without it.`,
  });
}
