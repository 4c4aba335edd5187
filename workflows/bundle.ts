import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH, WORKFLOWS_PATH } from './worker.ts';

/** `npm run build:workflows`: the pre-built workflow bundle a production worker runs. */
const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH });
mkdirSync(dirname(WORKFLOW_BUNDLE_PATH), { recursive: true });
writeFileSync(WORKFLOW_BUNDLE_PATH, code);
console.log(`wrote ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)`);
