import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../src/log.ts';
import { bundleWorkflows, TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS, WORKFLOW_BUNDLE_PATH } from './worker.ts';

/**
 * `npm run build:workflows`: the pre-built workflow bundles a production worker runs: one plain,
 * one with Temporal's OpenTelemetry interceptors for workers with tracing on (src/tracing.ts).
 * With `--out <file>` (and `--traced` for the second kind) it writes that one bundle only: what
 * `npm start` builds for its worker (WORKFLOW_BUNDLE). Each file is written whole, then renamed into
 * place, so a worker starting meanwhile reads the old bundle or the new one. Prints one line per
 * bundle written; webpack's report is logged at debug, its errors as errors.
 */
const { values } = parseArgs({ options: { out: { type: 'string' }, traced: { type: 'boolean', default: false } } });
const logger = createLogger('info', 'workflow-bundle');
const bundles: Array<readonly [string, readonly string[]]> = values.out
  ? [[values.out, values.traced ? TRACING_WORKFLOW_INTERCEPTORS : []]]
  : [
      [WORKFLOW_BUNDLE_PATH, []],
      [TRACED_WORKFLOW_BUNDLE_PATH, TRACING_WORKFLOW_INTERCEPTORS],
    ];
for (const [path, workflowInterceptorModules] of bundles) {
  const code = await bundleWorkflows(logger, workflowInterceptorModules);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.${process.pid}.tmp`, code);
  renameSync(`${path}.${process.pid}.tmp`, path);
  console.log(`wrote ${path} (${Math.round(code.length / 1024)} KiB)`);
}
