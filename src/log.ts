import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/**
 * Structured JSON logs. The request id (and, once known, the organisation) of the request being
 * served is attached to every line written while serving it, wherever in the code the line is
 * written, through AsyncLocalStorage.
 */
export interface LogScope {
  requestId: string;
  organisationId?: string;
  /** Transactions the request has committed so far (counted by src/db/client.ts). */
  commits?: number;
}

export const logScope = new AsyncLocalStorage<LogScope>();

/** Paths whose values never reach a log line. */
const REDACT = [
  'password',
  '*.password',
  'token',
  '*.token',
  'accessToken',
  'refreshToken',
  '*.accessToken',
  '*.refreshToken',
  'key',
  '*.key',
  'secret',
  '*.secret',
  'code',
  '*.code',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-channel-key"]',
  'req.headers.cookie',
];

/** `destination` defaults to stdout; tests pass a stream to read what would be logged. */
export function createLogger(level: string, name = 'api', destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    name,
    level,
    base: { service: 'ticketing', component: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT, censor: '[redacted]' },
    mixin() {
      const scope = logScope.getStore();
      if (!scope) return {};
      const { commits: _counted, ...fields } = scope;
      return fields;
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
