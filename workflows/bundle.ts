import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger } from '../src/log.ts';
import { bundleWorkflows, TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS, WORKFLOW_BUNDLE_PATH } from './worker.ts';

/**
 * `npm run build:workflows`: the pre-built workflow bundles a production worker runs: one plain,
 * one with Temporal's OpenTelemetry interceptors for workers with tracing on (src/tracing.ts).
 * Prints one line per bundle written; webpack's report is logged at debug, its errors as errors.
 */
const logger = createLogger('info', 'workflow-bundle');
for (const [path, workflowInterceptorModules] of [
  [WORKFLOW_BUNDLE_PATH, []],
  [TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS],
] as const) {
  const code = await bundleWorkflows(logger, workflowInterceptorModules);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, code);
  console.log(`wrote ${path} (${Math.round(code.length / 1024)} KiB)`);
}
