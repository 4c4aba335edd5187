import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { activeTracing, startTracing } from './tracing.ts';

describe('startTracing', () => {
  it('stays off without an OTLP endpoint, and with OTEL_SDK_DISABLED=true even with one', async () => {
    expect(await startTracing(loadConfig({}), 'api')).toBeNull();
    const disabled = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' });
    expect(await startTracing(disabled, 'worker')).toBeNull();
    expect(activeTracing()).toBeNull();
  });
});
