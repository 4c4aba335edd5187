import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { REPO_ROOT } from '../src/db/migrate.ts';
import { SEARCH_ATTRIBUTE_NAMES } from '../src/webhooks/starts.ts';

// No Docker engine runs on the development machines, so the stack cannot be started here; this
// checks its wiring against the service's own configuration schema instead.
const compose = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, Temporal with its UI, migrations, the API and two workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'temporal', 'temporal-setup', 'temporal-ui', 'worker']);
    expect(compose.services.worker.deploy.replicas).toBe(2);
    expect(compose.services.api.ports).toContain('4000:4000');
    expect(compose.services['temporal-ui'].ports).toContain('8233:8080');
  });

  it.each(['api', 'worker', 'migrate'])('gives %s a configuration the service accepts in production', (name) => {
    const config = loadConfig(compose.services[name].environment);
    expect(config.NODE_ENV).toBe('production');
    expect(config.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(config.TEMPORAL_ADDRESS).toBe('temporal:7233');
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
    expect(setup.command.filter((arg: string) => arg.startsWith('--type='))).toEqual(SEARCH_ATTRIBUTE_NAMES.map(() => '--type=KeywordList'));
  });
});
