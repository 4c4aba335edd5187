import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { REPO_ROOT } from '../src/db/migrate.ts';

// No Docker engine runs on the development machines, so the stack cannot be started here; this
// checks its wiring against the service's own configuration schema instead, with `${VAR:?…}` and
// `${VAR:-default}` in values substituted the way compose does from an .env file (after parsing).
const parsed = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
const dotEnv: Record<string, string> = {
  JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'test', secret: 'a-secret-of-this-test-only-0123456789' }]),
  SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};
function substitute(value: unknown, env: Record<string, string>): any {
  if (typeof value === 'string') {
    return value.replace(/\$\{(\w+)(?::([?-])([^}]*))?\}/g, (_match, name: string, kind?: string, rest?: string) => {
      if (env[name] !== undefined) return env[name]!;
      if (kind === '?') throw new Error(`compose would refuse to start: ${name} unset (${rest})`);
      return rest ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, env));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, env)]));
  return value;
}
const compose = substitute(parsed, dotEnv);

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, Temporal with its UI, migrations, the API and two workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'temporal', 'temporal-ui', 'worker']);
    expect(compose.services.worker.deploy.replicas).toBe(2);
    expect(compose.services.api.ports).toContain('4000:4000');
    expect(compose.services['temporal-ui'].ports).toEqual(['127.0.0.1:8233:8080']);
    expect(compose.services.temporal.ports).toEqual(['127.0.0.1:7233:7233']);
  });

  it('has no secret of its own: without JWT_SIGNING_KEYS and SECRETS_ENCRYPTION_KEY it does not start', () => {
    expect(() => substitute(parsed, {})).toThrow(/JWT_SIGNING_KEYS unset/);
  });

  it.each(['api', 'worker', 'migrate'])('gives %s a configuration the service accepts in production', (name) => {
    const config = loadConfig(compose.services[name].environment);
    expect(config.NODE_ENV).toBe('production');
    expect(config.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(config.TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it('starts the API and workers only after migrations succeeded and Temporal is healthy', () => {
    for (const name of ['api', 'worker']) {
      expect(compose.services[name].depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        temporal: { condition: 'service_healthy' },
      });
    }
  });
});
