import { createServer } from 'node:http';
import { createSchema, createYoga } from 'graphql-yoga';

/** The benchmark's baseline: a bare graphql-yoga hello-world on node:http, nothing else. */
const yoga = createYoga({
  schema: createSchema({ typeDefs: 'type Query { hello: String! }', resolvers: { Query: { hello: () => 'world' } } }),
  logging: false,
  graphiql: false,
});
// Yoga's node handler answers its own errors; the promise it returns needs no one waiting on it.
// eslint-disable-next-line @typescript-eslint/no-misused-promises
const server = createServer(yoga);
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
