import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from './config.ts';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(4000);
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(config.TEMPORAL_TASK_QUEUE).toBe('ticketing');
    expect(config.WEBHOOK_RETRY_SCHEDULE).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(config.WEBHOOK_ATTEMPT_TIMEOUT).toBe(15_000);
    expect(config.WEBHOOK_ALLOW_PRIVATE_URLS).toBe(false);
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('reads the origins allowed to read /graphql: any by default, or a list of origins', () => {
    expect(loadConfig({}).GRAPHQL_CORS_ORIGINS).toBe('*');
    expect(loadConfig({ GRAPHQL_CORS_ORIGINS: 'https://admin.example.com, http://localhost:5173' }).GRAPHQL_CORS_ORIGINS).toEqual([
      'https://admin.example.com',
      'http://localhost:5173',
    ]);
    expect(() => loadConfig({ GRAPHQL_CORS_ORIGINS: 'https://admin.example.com/app' })).toThrow(
      'GRAPHQL_CORS_ORIGINS: https://admin.example.com/app is not an origin (scheme://host[:port], no path); or * for any',
    );
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).PORT).toBe(4000);
  });

  it('names every invalid variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', WEBHOOK_RETRY_SCHEDULE: '5s,soon', DATABASE_URL: 'mysql://x' })).toThrow(
      new ConfigError(
        'Invalid configuration:\n  PORT: a number\n  DATABASE_URL: a postgres:// URL\n  WEBHOOK_RETRY_SCHEDULE: comma-separated durations such as 5s,5m,30m',
      ),
    );
  });

  it('requires real dependencies and keys in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /production requires DATABASE_URL, TEMPORAL_ADDRESS, JWT_SIGNING_KEYS, SECRETS_ENCRYPTION_KEY/,
    );
  });

  it('bounds how long an open stream holds its place without renewing it', () => {
    expect(loadConfig({}).LIVE_STREAM_LEASE).toBe(30_000);
    expect(() => loadConfig({ LIVE_STREAM_LEASE: '30d' })).toThrow(/LIVE_STREAM_LEASE: at most 10m/);
    expect(() => loadConfig({ LIVE_STREAM_LEASE: '0ms' })).toThrow(/LIVE_STREAM_LEASE: at least 3s/);
  });

  it('parses durations', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(() => parseDuration('2 hours')).toThrow();
  });
});
