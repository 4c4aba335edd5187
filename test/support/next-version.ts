import { declareVersion } from '../../src/versions.ts';

/**
 * A dated version newer than every real one, declared before anything builds the GraphQL schema
 * or the REST routes (import this module first): test/platform/versions-fixture.test.ts shows that a new
 * version flows through every surface from its declaration alone. It renames an event's `title`
 * to `name`, so at every older version events show `title` and bodies may send it.
 */
export const NEXT_VERSION = '2027-01-01';

declareVersion({
  date: NEXT_VERSION,
  summary: 'Events named by name (a test fixture).',
  changes: [{ kind: 'renamed', resource: 'Event', from: 'title', to: 'name', input: true, graphql: { type: 'String' } }],
  deprecatedAt: null,
  sunsetAt: null,
});
