import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROUTE_TABLES, withRouteTable } from '../../scripts/route-tables.ts';
import { LIMITS } from '../../src/limits/limits.ts';

/**
 * The house: docs that stay true and a tree a newcomer can read. The README is the front door
 * (short); the manuals live in docs/ by reader; the code says why in the domain's words and points
 * inside the repository, never at the work that produced it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** Tracked files under `paths` (git ls-files: what a clone holds). */
const tracked = (...paths: string[]) =>
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', ...paths], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && existsSync(path.join(ROOT, file)));

describe('docs', () => {
  it('each generated route table lists every route (run `npx tsx scripts/route-tables.ts`)', () => {
    for (const routeTable of ROUTE_TABLES) {
      const text = readFileSync(routeTable.path, 'utf8');
      expect(text, routeTable.path).toBe(withRouteTable(text, routeTable));
    }
  });

  it('docs/security.md states every named limit with its number (src/limits/limits.ts)', () => {
    const security = read('docs/security.md');
    for (const [name, value] of Object.entries(LIMITS)) {
      if (name === 'bodyBytes' || name === 'issuesPerError') continue;
      expect(security, name).toContain(`| ${value.toLocaleString('en')} (\`${name}\`) |`);
    }
  });

  it('the README is a front door: at most 150 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(150);
  });

  it('every local link of the docs leads to a file, and to a heading of it when it names one', () => {
    const slug = (heading: string) =>
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-');
    const headings = (file: string) => new Set([...read(file).matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!)));
    const broken: string[] = [];
    for (const file of tracked('*.md').filter((f) => !f.startsWith('node_modules/') && !f.startsWith('docs/spec/'))) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [where, anchor] = target!.split('#') as [string, string | undefined];
        const linked = where === '' ? file : path.normalize(path.join(path.dirname(file), where));
        if (!existsSync(path.join(ROOT, linked))) broken.push(`${file}: ${target}`);
        else if (anchor && linked.endsWith('.md') && !headings(linked).has(anchor)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('pointers', () => {
  it('every file a comment or a doc points at (test/…, src/…, schema/…, docs/…) exists', () => {
    const PATH =
      /(?<![\w./-])((?:test|src|schema|rest-compat|workflows|server|scripts|bench|docs|prisma)\/[\w./-]+\.(?:ts|md|sql|prisma|sh|json|graphql))\b/g;
    const missing: string[] = [];
    for (const file of tracked(
      'src',
      'schema',
      'rest-compat',
      'workflows',
      'server',
      'scripts',
      'bench',
      'test',
      'docs',
      'README.md',
      'CHANGELOG.md',
    )) {
      if (file.startsWith('docs/spec/') || !/\.(ts|md|prisma|sh|yml)$/.test(file)) continue;
      for (const [, cited] of read(file).matchAll(PATH)) {
        if (cited!.includes('generated') || cited!.includes('*')) continue;
        if (!existsSync(path.join(ROOT, cited!))) missing.push(`${file}: ${cited}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });
});

describe('no process noise', () => {
  // Issue numbers, and paths outside the repository, mean nothing to a reader of the code.
  // Tracker numbers ("issue" and a number), dated decisions ("decided" and a date) and paths outside the repository.
  const NOISE = [/\bissues? #?\d+/i, /\bdecided (on )?\d{4}-\d{2}-\d{2}/i, /\.\.\/shared\//];
  const PLACES = [
    'src',
    'schema',
    'rest-compat',
    'workflows',
    'server',
    'prisma',
    'scripts',
    'bench',
    'docs',
    'test',
    'README.md',
    'CHANGELOG.md',
  ];

  it('code, schema, migrations and docs cite no issue numbers, no dates of decisions and no path outside the repository', () => {
    const found: string[] = [];
    for (const file of tracked(...PLACES)) {
      if (file.startsWith('docs/spec/') || /\.(png|jpg|wasm|lock|json)$/.test(file)) continue;
      read(file)
        .split('\n')
        .forEach((line, index) => {
          if (NOISE.some((pattern) => pattern.test(line))) found.push(`${file}:${index + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(found).toEqual([]);
  });
});
