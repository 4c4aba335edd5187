/**
 * Workflow definitions. This file runs in Temporal's deterministic sandbox: it imports
 * activities as types only, never server code. Its exports are the workflows the worker
 * registers, under their export names: exactly src/webhooks/workflow-contract.ts's, checked below.
 */
import type { WebhookWorkflows } from '../src/webhooks/workflow-contract.ts';
import { deliverBatch } from './webhook-batch.ts';
import { deliverWebhook } from './webhook-delivery.ts';
import { recoverWebhookEndpoint, resendWebhookDelivery } from './webhook-manual.ts';

export { deliverBatch, deliverWebhook, recoverWebhookEndpoint, resendWebhookDelivery };

// Compile-time check, no workflow (not exported): every workflow the starters name exists here with
// the signature they start it with.
const _contract = { deliverBatch, deliverWebhook, recoverWebhookEndpoint, resendWebhookDelivery } satisfies WebhookWorkflows;
