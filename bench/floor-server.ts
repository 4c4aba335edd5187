import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import pg from 'pg';

/**
 * The floor of `npm run bench`'s list rows: node:http and pg running the service's own list
 * statement, nothing else (no authentication, no GraphQL, no validation). FLOOR_SAMPLES names a JSON
 * file of statements the API sent for varied list requests (text and parameters, captured on its
 * pool's query path); `GET /?i=N` runs sample N (modulo their number) on a pool of
 * DATABASE_POOL_SIZE connections, prepared by name as src/db/sql.ts prepares it, and answers its
 * rows as JSON. No Node code answering the same list can be faster than the statement it sends.
 */

const samples = JSON.parse(readFileSync(process.env.FLOOR_SAMPLES!, 'utf8')) as Array<{ text: string; values: unknown[] }>;
const names = samples.map(({ text }) => `s_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });

http
  .createServer((req, res) => {
    const i = Number(new URL(req.url ?? '/', 'http://floor').searchParams.get('i') ?? 0) % samples.length;
    const { text, values } = samples[i]!;
    pool.query({ name: names[i], text, values }).then(
      ({ rows }) => {
        const body = JSON.stringify({ data: rows });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      },
      (error: Error) => res.writeHead(500).end(error.message),
    );
  })
  .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
