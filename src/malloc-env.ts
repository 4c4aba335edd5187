/**
 * glibc's allocator settings an API process is started with. They must be in the
 * environment when node starts (glibc reads them before any JavaScript runs), so every launcher we
 * ship sets them for the API: `npm start`, the API_PROCESSES primary for the processes it forks,
 * docker compose, and the benchmarks, which start the API as the launchers do. An operator's own
 * value wins.
 *
 * Measured under `npm run bench` (one API process, 50 connections): glibc kept 75-110 MB of freed
 * memory in its heaps (calling malloc_trim(0) from gdb dropped RSS from 320 to 245 MB). Most of
 * it is the socket read buffers and other native memory that lives until a V8 collection frees
 * it, spread over one arena per thread that ever allocated. With one arena, and blocks of 32 KB and
 * more in their own mappings (returned to the system when freed), RSS at the end of the benchmark
 * went from ~340 to ~250 MB at the same CPU per request. The worker is not started with them: it
 * meets its memory target without, and its Temporal core threads allocate in parallel.
 */
export const API_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '1',
  MALLOC_MMAP_THRESHOLD_: '32768',
};

/** The allocator variables for an API started from `env`: `env`'s own values, else API_MALLOC_ENV's. */
export function apiMallocEnvFrom(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(API_MALLOC_ENV).map(([name, value]) => [name, env[name] ?? value]));
}

/** `env` with API_MALLOC_ENV's values for the ones it leaves unset. */
export function withApiMallocEnv<T extends Record<string, string | undefined>>(env: T): T & Record<string, string> {
  return { ...env, ...apiMallocEnvFrom(env) };
}
