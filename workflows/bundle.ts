import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS, WORKFLOW_BUNDLE_PATH, WORKFLOWS_PATH } from './worker.ts';

/**
 * `npm run build:workflows`: the pre-built workflow bundles a production worker runs: one plain,
 * one with Temporal's OpenTelemetry interceptors for workers with tracing on (src/tracing.ts).
 */
for (const [path, workflowInterceptorModules] of [
  [WORKFLOW_BUNDLE_PATH, []],
  [TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS],
] as const) {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: [...workflowInterceptorModules] });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, code);
  console.log(`wrote ${path} (${Math.round(code.length / 1024)} KiB)`);
}
