import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { README_PATH, readmeWithRoutes } from '../scripts/readme-routes.ts';

it('the README route table lists every /v1 route (run `npx tsx scripts/readme-routes.ts`)', () => {
  const readme = readFileSync(README_PATH, 'utf8');
  expect(readme).toBe(readmeWithRoutes(readme));
});

it('the README "Security model" states every named limit with its number (src/limits/limits.ts)', async () => {
  const { LIMITS } = await import('../src/limits/limits.ts');
  const readme = readFileSync(README_PATH, 'utf8');
  for (const [name, value] of Object.entries(LIMITS)) {
    if (name === 'bodyBytes' || name === 'issuesPerError') continue;
    expect(readme, name).toContain(`| ${value.toLocaleString('en')} (\`${name}\`) |`);
  }
});
