import { auditServer } from 'graphql-http';
import { expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';

const app = useTestApp();

it('passes every MUST and SHOULD audit of the GraphQL-over-HTTP specification', async () => {
  const results = await auditServer({ url: `${app().url}/graphql` });
  const failures = results
    .filter((result) => result.status !== 'ok' && (result.name.startsWith('MUST') || result.name.startsWith('SHOULD')))
    .map((result) => `${result.name}: ${'reason' in result ? result.reason : ''}`);
  expect(failures).toEqual([]);
  expect(results.length).toBeGreaterThanOrEqual(60);
});
