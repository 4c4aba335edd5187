import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { README_PATH, readmeWithRoutes } from '../scripts/readme-routes.ts';

it('the README route table lists every /v1 route (run `npx tsx scripts/readme-routes.ts`)', () => {
  const readme = readFileSync(README_PATH, 'utf8');
  expect(readme).toBe(readmeWithRoutes(readme));
});
