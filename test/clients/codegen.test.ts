import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { generate } from '@graphql-codegen/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { clientPresetConfig, OPERATIONS } from './codegen.ts';

/**
 * GraphQL Code Generator's client preset, as an admin frontend runs it: typed documents from the
 * printed schema and the kept operations (test/clients/operations/), compiled with
 * `tsc --strict` beside a small file that uses them with Apollo Client. An operation that does
 * not validate against the schema fails generation, and a type error fails the compile.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const work = mkdtempSync(path.join(tmpdir(), 'codegen-'));

afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * A frontend's file using the typed documents. Each `@ts-expect-error` is a mistake the types
 * must refuse: were a type `any`, the directive would be unused and the compile would fail.
 */
const USAGE = `
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { getFragmentData } from './gql';
import {
  EventDetailDocument,
  EventRowFragmentDoc,
  EventsListDocument,
  OrderRowFragmentDoc,
  OrdersPageDocument,
  RefetchEventDocument,
  UpdateEventDocument,
  UserErrorFieldsFragmentDoc,
  VenueFieldsFragmentDoc,
  type EventStatus,
  type UserErrorCode,
} from './gql/graphql';

export const client = new ApolloClient({
  link: new HttpLink({ uri: '/graphql', headers: { 'x-service-org': 'acme' } }),
  cache: new InMemoryCache({
    possibleTypes: { Node: ['Event', 'Venue'] },
    typePolicies: { Query: { fields: { events: relayStylePagination(['status', 'q']) } } },
  }),
});

export async function eventNames(status: EventStatus): Promise<string[]> {
  const { data } = await client.query({ query: EventsListDocument, variables: { first: 25, status } });
  const rows = (data?.events?.edges ?? []).map((edge) => getFragmentData(EventRowFragmentDoc, edge.node));
  // @ts-expect-error fragment masking: a row's fields are read through its fragment
  void data?.events?.edges[0]?.node.name;
  const venue = rows[0] ? getFragmentData(VenueFieldsFragmentDoc, rows[0].venue) : null;
  // @ts-expect-error the venue is nullable: an event may have none
  void venue.name;
  return rows.map((row) => row.name);
}

export async function eventDetail(id: string) {
  const { data } = await client.query({ query: EventDetailDocument, variables: { id } });
  const occurrences: string[] = data?.event?.occurrences?.edges.map((edge) => edge.node.startsAt) ?? [];
  const prices: number[] = data?.event?.ticketTypes?.edges.map((edge) => edge.node.priceAmount) ?? [];
  const refetched = await client.query({ query: RefetchEventDocument, variables: { id } });
  const node = refetched.data?.node;
  const name = node?.__typename === 'Event' ? getFragmentData(EventRowFragmentDoc, node).name : undefined;
  // @ts-expect-error a required variable is missing
  await client.query({ query: EventDetailDocument, variables: {} });
  return { occurrences, prices, name };
}

export async function confirmedOrders(eventId: string, after?: string) {
  const { data } = await client.query({ query: OrdersPageDocument, variables: { eventId, status: 'CONFIRMED', after } });
  // @ts-expect-error enum values are the schema's (UPPER_CASE)
  await client.query({ query: OrdersPageDocument, variables: { status: 'confirmed' } });
  return (data?.orders?.edges ?? []).map((edge) => getFragmentData(OrderRowFragmentDoc, edge.node).orderNumber);
}

/** A rename: the event as changed, or the userErrors saying why not, one line each. */
export async function rename(id: string, name: string): Promise<string[]> {
  const { data } = await client.mutate({ mutation: UpdateEventDocument, variables: { id, input: { name } } });
  const payload = data?.updateEvent;
  const errors = getFragmentData(UserErrorFieldsFragmentDoc, payload?.userErrors ?? []);
  const codes: UserErrorCode[] = errors.map((error) => error.code);
  // @ts-expect-error an input field of the wrong type
  await client.mutate({ mutation: UpdateEventDocument, variables: { id, input: { name: 42 } } });
  if (codes.length > 0) return errors.map((error) => \`\${(error.field ?? []).join('.')}: \${error.message}\`);
  return payload?.event ? [getFragmentData(EventRowFragmentDoc, payload.event).name] : [];
}
`;

/** tsc over a folder, strict, as a bundler-built frontend compiles (browser types, no Node's). */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2023', 'DOM'],
    types: [],
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
  },
  include: ['**/*.ts'],
};

async function compile(folder: string) {
  writeFileSync(path.join(folder, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  // Resolves @apollo/client and the preset's imports as the frontend's own node_modules would.
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(folder, 'node_modules'), 'dir');
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  return run(process.execPath, [tsc, '-p', folder, '--strict', '--noEmit'], { cwd: folder }).then(
    () => '',
    (error: Error & { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}` || error.message,
  );
}

describe('the client preset', () => {
  it(
    'generates typed documents of the kept operations that compile under tsc --strict with a typed usage',
    { timeout: 120_000 },
    async () => {
      const folder = path.join(work, 'frontend');
      const files: Array<{ filename: string; content: string }> = await generate(
        { ...clientPresetConfig(`${folder}/gql/`), silent: true },
        true,
      );
      expect(files.map((file) => path.basename(file.filename)).sort()).toEqual(['fragment-masking.ts', 'gql.ts', 'graphql.ts', 'index.ts']);
      const types = files.find((file) => file.filename.endsWith('graphql.ts'))!.content;
      for (const name of ['EventsList', 'EventDetail', 'RefetchEvent', 'OrdersPage', 'CreateEvent', 'UpdateEvent', 'AssignRole']) {
        expect(types).toContain(`export const ${name}Document`);
      }
      writeFileSync(path.join(folder, 'usage.ts'), USAGE);
      expect(await compile(folder)).toBe('');
    },
  );

  it('fails generation on an operation that does not validate against the schema', async () => {
    const folder = path.join(work, 'invalid');
    const broken = path.join(work, 'broken.graphql');
    writeFileSync(broken, 'query Broken {\n  events(first: 1) {\n    nodes {\n    nameTypo\n    }\n  }\n}\n');
    const generating = generate({ ...clientPresetConfig(`${folder}/gql/`, [`${OPERATIONS}*.graphql`, broken]), silent: true }, true);
    await expect(generating).rejects.toThrow(/Cannot query field "nameTypo" on type "Event"/);
  });
});
