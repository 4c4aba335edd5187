import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'prisma/config';

// The CLI would download the native schema engine, which these machines cannot reach; it runs
// this program instead (the Wasm engine over adapter-pg, see prisma/engine/README.md).
// An engine chosen from outside (e.g. a native binary in CI with internet) wins.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(new URL('./prisma/engine/schema-engine.mjs', import.meta.url));

export default defineConfig({
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  datasource: {
    // process.env rather than env(): env() throws when the variable is unset, and
    // `prisma generate` must work without a database.
    url: process.env.DATABASE_URL,
    // Unset (the default): `migrate dev` and `migrate diff --from-migrations` create a
    // throw-away database next to the main one and drop it afterwards, which needs CREATEDB.
    // Set it only where the role cannot create databases; that database is emptied on each use,
    // so it must be dedicated to this purpose (the engine refuses the main database).
    shadowDatabaseUrl: process.env.SHADOW_DATABASE_URL || undefined,
  },
});
