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
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
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

/**
 * The query compiler (WebAssembly) ships as a module whose one export is the binary in base64. A
 * module stays loaded for the life of the process, and with it both its source and the string it
 * exports: 9.2 MB of every API and worker process's heap (a heap snapshot of an idle API), for a
 * binary read once at start. The patch writes the binary beside the module and makes the export an
 * object whose value is that file's bytes, read when the generated client decodes it
 * (`Buffer.from(wasm, 'base64')`, src/generated/prisma/internal/class.ts: a Buffer given as the
 * value is copied as it is) and then garbage. Only the PostgreSQL build is loaded, so only it is
 * patched; the ES module is the one Node loads, the CommonJS one is what `require` would.
 */
const prismaCompilerWasm = {
  binary: 'runtime/query_compiler_fast_bg.postgresql.wasm',
  literal: /^const wasm = "([A-Za-z0-9+/=]+)";\n(?:export \{ wasm \}|module\.exports = \{ wasm \})\n?$/,
  modules: {
    'runtime/query_compiler_fast_bg.postgresql.wasm-base64.mjs': [
      '// The binary is in query_compiler_fast_bg.postgresql.wasm (scripts/patch-dependencies.mjs in the service).',
      "import { readFileSync } from 'node:fs';",
      "const wasm = { valueOf: () => readFileSync(new URL('./query_compiler_fast_bg.postgresql.wasm', import.meta.url)) };",
      'export { wasm }',
      '',
    ].join('\n'),
    'runtime/query_compiler_fast_bg.postgresql.wasm-base64.js': [
      '// The binary is in query_compiler_fast_bg.postgresql.wasm (scripts/patch-dependencies.mjs in the service).',
      "const { readFileSync } = require('node:fs');",
      "const wasm = { valueOf: () => readFileSync(require('node:path').join(__dirname, 'query_compiler_fast_bg.postgresql.wasm')) };",
      'module.exports = { wasm }',
      '',
    ].join('\n'),
  },
};

/** Node loads `client.js` (the package's `node` condition); a bundler resolving `import`, `client.mjs`. */
const PATCHES = [
  { package: '@prisma/client', version: '7.10.0', files: ['runtime/client.js', 'runtime/client.mjs'], replacements: prismaParameterGraph },
  { package: '@prisma/client', version: '7.10.0', wasm: prismaCompilerWasm },
];

const occurrences = (text, part) => text.split(part).length - 1;

if (process.argv.includes('--list')) {
  console.log([...new Set(PATCHES.map((patch) => `${patch.package}@${patch.version}`))].join('\n'));
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
  const root = path.dirname(manifest);
  if (patch.wasm) {
    problems.push(...moveWasmToFile(root, `${patch.package}@${version}`, patch.wasm));
    continue;
  }
  for (const relative of patch.files) {
    const file = path.join(root, relative);
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

/** Writes the binary a base64 module carries beside it and the module that reads it; the problems found. */
function moveWasmToFile(root, spec, { binary, literal, modules }) {
  const found = [];
  const binaryFile = path.join(root, binary);
  for (const [relative, patched] of Object.entries(modules)) {
    const file = path.join(root, relative);
    const name = `${spec} ${relative}`;
    const text = readFileSync(file, 'utf8');
    if (text === patched && existsSync(binaryFile)) continue;
    if (check) {
      found.push(`${name}: not patched (run node scripts/patch-dependencies.mjs)`);
      continue;
    }
    const bytes = text === patched ? undefined : Buffer.from(literal.exec(text)?.[1] ?? '', 'base64');
    if (!bytes || bytes.subarray(0, 4).toString('latin1') !== '\0asm') {
      found.push(`${name}: expected one base64 WebAssembly literal (${bytes ? 'found none' : `and ${binary} is missing`})`);
      continue;
    }
    writeFileSync(binaryFile, bytes);
    writeFileSync(file, patched);
  }
  return found;
}

if (problems.length) {
  console.error(`patch-dependencies:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
