import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { publicSchema } from './index.ts';

/** The committed SDL: `npm run generate` rewrites it; test/platform/schema-sdl.test.ts fails on drift. */
export const SDL_PATH = fileURLToPath(new URL('./schema.graphql', import.meta.url));

export function printedSdl(): string {
  return `${printSchema(publicSchema)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SDL_PATH, printedSdl());
  console.log(`wrote ${SDL_PATH}`);
}
