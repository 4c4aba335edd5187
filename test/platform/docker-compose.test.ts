import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT, EMBEDDED_WEBHOOK_BATCH_SIZE } from '../../src/embedded/temporal.ts';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/webhooks/starts.ts';

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
      if (env[name] !== undefined) return env[name];
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
  it('runs PostgreSQL, Temporal with its UI, migrations, two API replicas behind a proxy, two workers, and the setup of the webhook search attributes', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'migrate',
      'postgres',
      'proxy',
      'temporal',
      'temporal-setup',
      'temporal-ui',
      'worker',
    ]);
    expect(compose.services.api.deploy.replicas).toBe(2);
    expect(compose.services.worker.deploy.replicas).toBe(2);
    // Replicas cannot share a published port: only the proxy publishes the API's.
    expect(compose.services.api.ports).toBeUndefined();
    expect(compose.services.proxy.ports).toEqual(['4000:4000']);
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

  it('restarts the API replicas, the workers and the proxy when they stop; migrations run once', () => {
    for (const name of ['api', 'worker', 'proxy']) expect(compose.services[name].restart, name).toBe('unless-stopped');
    expect(compose.services.migrate.restart).toBe('no');
  });

  it('runs the built image with `node dist/...` for migrations, the API and the workers: no tsx', () => {
    const commands = {
      migrate: ['node', 'dist/src/cli/main.js', 'migrate'],
      api: ['node', 'dist/server/main.js'],
      worker: ['node', 'dist/workflows/worker-main.js'],
    };
    for (const [name, command] of Object.entries(commands)) {
      expect(compose.services[name].build, name).toBe('.');
      expect(compose.services[name].command, name).toEqual(command);
      // dist/ mirrors the sources (tsconfig.build.json): each entry is built from a file that exists.
      const source = command[1]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(REPO_ROOT, source)), source).toBe(true);
    }
    expect(JSON.stringify(compose)).not.toContain('tsx');
    const dockerfile = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/server\/main\.js"\]$/m);
    expect(dockerfile).not.toContain('tsx');
  });

  it('puts the official HAProxy image in front of the API replicas, with its configuration from deploy/', () => {
    const proxy = compose.services.proxy;
    expect(proxy.image).toMatch(/^haproxy:\d+\.\d+$/);
    expect(proxy.volumes).toEqual(['./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro']);
    expect(proxy.depends_on).toEqual({ api: { condition: 'service_healthy' } });
    expect(compose.services.api.healthcheck.test.join(' ')).toContain(`127.0.0.1:${compose.services.api.environment.PORT}/readyz`);
  });

  it('deploy/haproxy.cfg listens on the published port and balances over every api replica, checking /readyz', () => {
    const cfg = haproxySections(readFileSync(path.join(REPO_ROOT, 'deploy', 'haproxy.cfg'), 'utf8'));
    const apiPort = compose.services.api.environment.PORT;
    const [published] = compose.services.proxy.ports[0].split(':').slice(-1);
    expect(cfg['frontend public']).toContain(`bind :${published}`);
    expect(cfg['frontend public']).toContain('default_backend api');
    // Docker's DNS answers `api` with every replica's address; the templates follow scaling.
    expect(cfg['resolvers docker']).toContain('nameserver docker 127.0.0.11:53');
    const servers = cfg['backend api']!.filter((line) => line.startsWith('server-template '));
    expect(servers).toHaveLength(2);
    for (const line of servers) expect(line).toMatch(new RegExp(`^server-template \\S+ \\d+ api:${apiPort} resolvers docker `));
    expect(cfg['backend api']).toContain('option httpchk GET /readyz');
    expect(cfg['backend api']).toContain('http-check expect status 200');
    // The client address: the proxy overwrites X-Forwarded-For, and the API believes one hop.
    expect(cfg['frontend public']).toContain('http-request set-header X-Forwarded-For %[src]');
    expect(compose.services.api.environment.TRUST_PROXY).toBe('1');
    expect(loadConfig(compose.services.api.environment).TRUST_PROXY).toBe('1');
  });

  it('starts the API and workers only after migrations succeeded and Temporal is healthy, with the webhook search attributes', () => {
    for (const name of ['api', 'worker']) {
      expect(compose.services[name].depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        temporal: { condition: 'service_healthy' },
        'temporal-setup': { condition: 'service_completed_successfully' },
      });
    }
    const setup = compose.services['temporal-setup'];
    expect(setup.entrypoint).toEqual(['temporal']);
    const names = setup.command.filter((arg: string) => arg.startsWith('--name=')).map((arg: string) => arg.slice('--name='.length));
    expect(names).toEqual(SEARCH_ATTRIBUTE_NAMES);
    expect(setup.command.filter((arg: string) => arg.startsWith('--type='))).toEqual(
      SEARCH_ATTRIBUTE_NAMES.map(() => '--type=KeywordList'),
    );
  });

  it('gives Temporal the search attribute limit that a batch of the configured size needs, as npm start gives its own', () => {
    const temporal = compose.services.temporal;
    const mounted = temporal.volumes.find((volume: string) => volume.includes('temporal-dynamic-config.yaml')) as string;
    const [source, target] = mounted.split(':');
    expect(target).toBe(path.posix.join('/etc/temporal', temporal.environment.DYNAMIC_CONFIG_FILE_PATH));
    const dynamic = parse(readFileSync(path.join(REPO_ROOT, source!), 'utf8'));
    const limit = dynamic['frontend.searchAttributesSizeOfValueLimit'][0].value;
    expect(limit).toBe(EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT);
    for (const name of ['api', 'worker']) {
      expect(loadConfig(compose.services[name].environment).WEBHOOK_BATCH_SIZE).toBe(EMBEDDED_WEBHOOK_BATCH_SIZE);
    }
  });
});

/** haproxy.cfg as section header -> its directive lines (comments and blank lines dropped). */
function haproxySections(text: string): Record<string, string[]> {
  const sections: Record<string, string[]> = {};
  let current: string[] | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) continue;
    if (/^\S/.test(raw)) sections[line] = current = [];
    else current?.push(line.replace(/\s+/g, ' '));
  }
  return sections;
}
