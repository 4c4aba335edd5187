import type { Database } from './db/client.ts';
import type { Logger } from './log.ts';
import type { Runtime } from './runtime.ts';

/**
 * Everything one request knows about itself. Created once per HTTP request and shared by the
 * GraphQL resolvers and the REST compatibility layer (which runs GraphQL operations in-process
 * with this very object), so both surfaces see the same credential, organisation and version.
 */
export interface RequestContext {
  requestId: string;
  runtime: Runtime;
  db: Database;
  logger: Logger;
  /** The dated API version this request resolved to (Service-Version header > organisation > current). */
  apiVersion: string;
  /** The X-Service-Org header, trimmed; null when absent. */
  organisationSlug: string | null;
}
