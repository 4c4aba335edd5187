import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue } from '../support/sales.ts';
import { API_VERSIONS, CURRENT_VERSION } from '../../src/versions.ts';

/** The oldest version still served: the one most changes separate from the current. */
const OLDEST = API_VERSIONS.find((v) => v.status !== 'sunset')!.date;

const run = promisify(execFile);

/**
 * An independent fuzzer (Schemathesis, from PyPI) reads /v1/openapi.json and
 * /live/openapi.json as a client generator would, sends every operation examples built from the
 * documented schemas (valid and invalid), and fails on any 5xx and on any answer the document does
 * not describe: its status, content type, or body schema. Bounded examples per operation.
 */

const app = useTestApp();
let st: string;

beforeAll(async () => {
  st = (await run('bash', [path.join(REPO_ROOT, 'scripts/ensure-schemathesis.sh')], { maxBuffer: 1 << 24 })).stdout
    .trim()
    .split('\n')
    .at(-1)!;
}, 300_000);

const CHECKS = ['not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_schema_conformance'];

/**
 * Fuzzes the surface's document as served at `version` (fetched with that Service-Version, so it
 * describes that version's shapes), every request sent at that version.
 */
async function fuzz(surface: '/v1' | '/live', version: string, headers: Record<string, string>) {
  const reports = mkdtempSync(path.join(tmpdir(), 'st-'));
  const document = path.join(reports, 'openapi.json');
  const served = await fetch(`${app().url}${surface}/openapi.json`, { headers: { 'service-version': version } });
  expect(served.status).toBe(200);
  // The fuzzer fills documented header parameters itself (-H does not override them): the ones given
  // here are pinned to their value, so every request is asked at the version whose shapes the document
  // describes, of the organisation whose credential it carries.
  const pinned = { ...headers, 'Service-Version': version };
  const described = (await served.json()) as { components: { parameters: Record<string, { name: string; schema: object }> } };
  for (const parameter of Object.values(described.components.parameters)) {
    const value = pinned[parameter.name as keyof typeof pinned];
    if (value !== undefined) parameter.schema = { type: 'string', enum: [value] };
  }
  writeFileSync(document, JSON.stringify(described));
  const args = [
    'run',
    document,
    '--url',
    `${app().url}${surface}`,
    '--checks',
    CHECKS.join(','),
    '--max-examples',
    // The current version in depth; an older one, whose differences are response shapes, lighter.
    process.env.FUZZ_EXAMPLES ?? (version === CURRENT_VERSION ? '8' : '3'),
    '--phases',
    // Coverage (every boundary of every documented constraint) and random examples at the current version.
    // An older version differs in what it answers: its reads, with their boundary cases.
    version === CURRENT_VERSION ? (process.env.FUZZ_PHASES ?? 'examples,coverage,fuzzing') : 'coverage',
    ...(version === CURRENT_VERSION ? [] : ['--include-method', 'GET']),
    '--workers',
    '2',
    '--seed',
    '1',
    '--no-color',
    ...Object.entries(pinned).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
  ];
  // In the run's own folder: Schemathesis keeps a cache (.schemathesis/) where it runs.
  const once = () =>
    run(st, args, { cwd: reports, maxBuffer: 1 << 26, env: { ...process.env, SCHEMATHESIS_HOOKS: '' } }).then(
      (ok) => ({ code: 0, output: ok.stdout + ok.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
  let result = await once();
  // The tool itself can crash (CPython 3.11's "AST constructor recursion depth mismatch" when its
  // worker threads describe strategies at once): a run that found no failure but ended in a runtime
  // error is run once more. A failure of ours is never retried.
  if (result.code !== 0 && /Runtime Error/.test(result.output) && !/^Failures:/m.test(result.output)) result = await once();
  rmSync(reports, { recursive: true, force: true });
  return result;
}

// Each run its own organisation: a fuzzer that renames the organisation or deletes an account must
// not change what the next run starts from.
describe('the OpenAPI documents tell the truth', () => {
  // /v1 at older versions: test/platform/versions.test.ts checks each changed resource's answers against that
  // version's document (the fuzzer fills every list filter in, so its lists find no rows to shape).
  it.each([CURRENT_VERSION])('/v1 at %s: every operation, fuzzed as the staff administrator', { timeout: 600_000 }, async (version) => {
    const org = await createOrganisation(app(), 'fuzz');
    // Something in every list: an event on sale with a venue, a channel, a confirmed order with its customer and passes.
    const catalogue = await seedCatalogue(app(), org);
    await placeOrder(app(), catalogue.channel, catalogue);
    const { code, output } = await fuzz('/v1', version, { Authorization: `Bearer ${org.adminToken}`, 'X-Service-Org': org.slug });
    expect(code, output.slice(-20_000)).toBe(0);
  });

  it.each([CURRENT_VERSION, OLDEST])(
    '/live at %s: every operation, fuzzed with a channel’s secret key',
    { timeout: 600_000 },
    async (version) => {
      const org = await createOrganisation(app(), 'fuzz');
      const catalogue = await seedCatalogue(app(), org);
      const { code, output } = await fuzz('/live', version, { 'X-Channel-Key': catalogue.channel.secret });
      expect(code, output.slice(-20_000)).toBe(0);
    },
  );
});
