#!/usr/bin/env node
/**
 * Changes to installed dependencies' code, applied after every install: by package.json's
 * postinstall, and by the Dockerfile's production-dependencies stage, which installs with
 * --ignore-scripts and runs this file itself. Each patch names the exact text it replaces and how
 * often that text occurs in the pinned version, so an upgraded dependency that no longer matches
 * fails the install here, and whoever upgrades decides whether the patch is still needed. Running
 * it again on patched files changes nothing.
 *
 *   node scripts/patch-dependencies.mjs           apply the patches
 *   node scripts/patch-dependencies.mjs --check   exit 1 unless every patch is applied
 *   node scripts/patch-dependencies.mjs --list    the packages it patches, a name@version a line
 *
 * Plain JavaScript: it runs where only production dependencies are installed (no tsx).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(repoRoot, 'package.json'));

/**
 * @prisma/client's runtime reads the generated client's parameter graph (the shape of every
 * query's arguments, used to cache query plans) into one object per node, keyed by indexes into
 * the schema's table of names. V8 keeps integer keys as array elements sized to the largest
 * index, so each of this schema's ~7,000 nodes carried a mostly empty array of ~12 KB: 20 MB of
 * every API and worker process's heap for as long as it runs (a heap snapshot of an idle API
 * after its first query: 95 MB, 75 MB with the patch). A Map per node holds the same edges.
 * The runtime reads the graph in one class; these are all its writes and reads of `edges`.
 */
const prismaParameterGraph = [
  {
    from: 'o={};for(let s=0;s<i;s++){let a=this.#i(),u=this.#a(),',
    to: 'o=new Map;for(let s=0;s<i;s++){let a=this.#i(),u=this.#a(),',
    count: 1,
  },
  {
    from: 'o={};for(let s=0;s<i;s++){let a=this.#i(),u=this.#o(),m=this.#o(),P={};',
    to: 'o=new Map;for(let s=0;s<i;s++){let a=this.#i(),u=this.#o(),m=this.#o(),P={};',
    count: 1,
  },
  { from: 'o[a]=S}r.push({edges:o})', to: 'o.set(a,S)}r.push({edges:o})', count: 1 },
  { from: 'o[a]=P}r.push({edges:o})', to: 'o.set(a,P)}r.push({edges:o})', count: 1 },
  { from: 'let o=n.edges[i];', to: 'let o=n.edges.get(i);', count: 2 },
];

/** Node loads `client.js` (the package's `node` condition); a bundler resolving `import`, `client.mjs`. */
const PATCHES = [
  { package: '@prisma/client', version: '7.10.0', files: ['runtime/client.js', 'runtime/client.mjs'], replacements: prismaParameterGraph },
];

const occurrences = (text, part) => text.split(part).length - 1;

if (process.argv.includes('--list')) {
  console.log(PATCHES.map((patch) => `${patch.package}@${patch.version}`).join('\n'));
  process.exit(0);
}

const check = process.argv.includes('--check');
const problems = [];
for (const patch of PATCHES) {
  const manifest = require.resolve(`${patch.package}/package.json`);
  const { version } = JSON.parse(readFileSync(manifest, 'utf8'));
  if (version !== patch.version) {
    problems.push(`${patch.package}@${version}: the patch is for ${patch.version}; see scripts/patch-dependencies.mjs`);
    continue;
  }
  for (const relative of patch.files) {
    const file = path.join(path.dirname(manifest), relative);
    const name = `${patch.package}@${version} ${relative}`;
    const text = readFileSync(file, 'utf8');
    if (patch.replacements.every(({ from, to, count }) => occurrences(text, to) === count && !text.includes(from))) continue;
    if (check) {
      problems.push(`${name}: not patched (run node scripts/patch-dependencies.mjs)`);
      continue;
    }
    const mismatch = patch.replacements.find(({ from, count }) => occurrences(text, from) !== count);
    if (mismatch) {
      problems.push(`${name}: expected ${mismatch.count} of ${JSON.stringify(mismatch.from)}, found ${occurrences(text, mismatch.from)}`);
      continue;
    }
    writeFileSync(
      file,
      patch.replacements.reduce((patched, { from, to }) => patched.split(from).join(to), text),
    );
  }
}
if (problems.length) {
  console.error(`patch-dependencies:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
