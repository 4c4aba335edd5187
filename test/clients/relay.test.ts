import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { createEvent, createOccurrence } from '../support/sales.ts';
import { SCALARS, SCHEMA } from './codegen.ts';

/**
 * relay-compiler (the binary its npm package ships) over an events screen written as a Relay app
 * writes it (test/clients/relay/EventScreen.ts): a `@refetchable` fragment on Event, refetched
 * through `node(id:)`, and a `@connection` fragment on the events list, compiled against the
 * printed schema. The operations it generates are then sent to the live API.
 */
const relay: string | null = createRequire(import.meta.url)('relay-compiler');
const SCREEN = path.join(import.meta.dirname, 'relay/EventScreen.ts');
const work = mkdtempSync(path.join(tmpdir(), 'relay-'));
const app = useTestApp();
let org: TestOrganisation;
/** An event with two occurrences, in start order. */
let staged: { eventId: string; occurrenceIds: string[] };

beforeAll(async () => {
  org = await createOrganisation(app, 'relay');
  for (let i = 0; i < 3; i += 1) await createEvent(app, org, { name: `Relay ${i}` });
  const event = await createEvent(app, org, { name: 'Relay staged' });
  const days = [3, 5].map((day) => new Date(Date.now() + day * 86_400_000));
  const occurrenceIds: string[] = [];
  for (const startsAt of days) occurrenceIds.push((await createOccurrence(app, org, event, startsAt)).id);
  staged = { eventId: event.id, occurrenceIds };
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** relay-compiler over `sources` in a project of its own: its exit code, output and artifacts folder. */
function compile(name: string, sources: Record<string, string>) {
  const project = path.join(work, name);
  const artifacts = path.join(project, 'src/__generated__');
  mkdirSync(artifacts, { recursive: true });
  for (const [file, text] of Object.entries(sources)) writeFileSync(path.join(project, 'src', file), text);
  const config = {
    src: './src',
    schema: SCHEMA,
    language: 'typescript',
    artifactDirectory: './src/__generated__',
    customScalarTypes: SCALARS,
  };
  writeFileSync(path.join(project, 'relay.config.json'), JSON.stringify(config));
  if (!relay) throw new Error(`relay-compiler ships no binary for ${process.platform} ${process.arch}`);
  return new Promise<{ code: number; output: string; artifacts: string }>((resolve) => {
    execFile(relay, [], { cwd: project }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`, artifacts });
    });
  });
}

/** The operation text Relay stored in a generated query artifact. */
function operationText(artifacts: string, queryName: string): string {
  const artifact = readFileSync(path.join(artifacts, `${queryName}.graphql.ts`), 'utf8');
  const text = /"text": ("(?:[^"\\]|\\.)*")/.exec(artifact);
  if (!text) throw new Error(`${queryName}: no operation text in its artifact`);
  return JSON.parse(text[1]!) as string;
}

describe('relay-compiler', () => {
  let artifacts: string;

  it('compiles the events screen: a @refetchable fragment on Event, a @connection on events and on its occurrences', async () => {
    const result = await compile('screen', { 'EventScreen.ts': readFileSync(SCREEN, 'utf8') });
    expect(result.code, result.output).toBe(0);
    artifacts = result.artifacts;
    expect(operationText(artifacts, 'EventScreenRefetchQuery')).toMatch(/node\(id: \$id\)/);
    expect(operationText(artifacts, 'EventScreenRefetchQuery')).toMatch(
      /occurrences\(first: \$occurrenceCount, after: \$occurrenceCursor\)/,
    );
    expect(operationText(artifacts, 'EventScreenEventsPaginationQuery')).toMatch(
      /events\(first: \$count, after: \$cursor, status: \$status\)/,
    );
  });

  it('generates operations the live API answers: a refetch by id, its occurrences and the events page by page', async () => {
    expect(artifacts, 'the compile above must pass first').toBeDefined();
    const events = await graphql(app, '{ events(first: 100) { nodes { id } } }', {}, asAdmin(org));
    const all: string[] = events.body.data.events.nodes.map((event: { id: string }) => event.id);

    const refetch = await graphql(app, operationText(artifacts, 'EventScreenRefetchQuery'), { id: all[0] }, asAdmin(org));
    expect(refetch.body.errors, JSON.stringify(refetch.body.errors)).toBeUndefined();
    expect(refetch.body.data.node).toMatchObject({ __typename: 'Event', id: all[0], venue: null, account: { id: org.account.id } });

    // The refetch query pages the event's occurrences, as usePaginationFragment asks for them.
    const refetchText = operationText(artifacts, 'EventScreenRefetchQuery');
    const occurrences: string[] = [];
    let occurrenceCursor: string | null = null;
    for (let page = 0; page < 5; page += 1) {
      const res = await graphql(app, refetchText, { id: staged.eventId, occurrenceCount: 1, occurrenceCursor }, asAdmin(org));
      expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
      const connection = res.body.data.node.occurrences;
      occurrences.push(...connection.edges.map((edge: { node: { id: string } }) => edge.node.id));
      if (!connection.pageInfo.hasNextPage) break;
      occurrenceCursor = connection.pageInfo.endCursor;
    }
    expect(occurrences).toEqual(staged.occurrenceIds);

    const paging = operationText(artifacts, 'EventScreenEventsPaginationQuery');
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page += 1) {
      const res = await graphql(app, paging, { count: 2, cursor }, asAdmin(org));
      expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
      const connection = res.body.data.events;
      seen.push(...connection.edges.map((edge: { node: { id: string } }) => edge.node.id));
      if (!connection.pageInfo.hasNextPage) break;
      cursor = connection.pageInfo.endCursor;
    }
    expect(seen).toEqual(all);
  });

  it('exits non-zero, saying why, on a @refetchable fragment of a type that is not a Node', async () => {
    const broken = [
      'const graphql = String.raw;',
      'export const countersFragment = graphql`',
      '  fragment Broken_counters on SalesCounters @refetchable(queryName: "BrokenRefetchQuery") {',
      '    sold',
      '  }',
      '`;',
    ].join('\n');
    const result = await compile('broken', { 'Broken.ts': broken });
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('Invalid use of @refetchable');
  });
});
