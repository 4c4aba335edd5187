import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { Logger } from '../log.ts';
import type { RecoverWebhookEndpointInput, WebhookWorkflowName, WebhookWorkflows } from './workflow-contract.ts';

/**
 * Every webhook workflow is started here, with the search attributes operators query in the
 * Temporal UI: `WebhookDeliveryIds = 'whd_…'` finds the batch that made a delivery's first attempt
 * and, if it was retried, the delivery's own retry workflow (workflow id = the delivery id);
 * `WebhookEndpointIds` and `WebhookEventIds` find them by endpoint and by source event.
 *
 * The attributes must be registered on the namespace (the embedded dev server does it at start,
 * docker compose in its temporal-setup step, a worker at start when it may). Where they are not, a
 * start carrying them is refused by the server; delivery must not depend on an operator's
 * convenience, so the start is made again without them (the memo still names every delivery) and
 * the omission is logged as an error.
 */

export const SEARCH_ATTRIBUTES = {
  deliveryIds: defineSearchAttributeKey('WebhookDeliveryIds', SearchAttributeType.KEYWORD_LIST),
  endpointIds: defineSearchAttributeKey('WebhookEndpointIds', SearchAttributeType.KEYWORD_LIST),
  eventIds: defineSearchAttributeKey('WebhookEventIds', SearchAttributeType.KEYWORD_LIST),
} as const;

/** `temporal operator search-attribute create` / `start-dev --search-attribute` arguments. */
export const SEARCH_ATTRIBUTE_NAMES = Object.values(SEARCH_ATTRIBUTES).map((key) => key.name);

/** What one delivery contributes to a workflow's search attributes and memo. */
export interface DeliveryLabel {
  deliveryId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  accountId: string;
  organisationId: string;
}

/** The label of a delivery row (or of a loaded delivery). */
export function labelOf(delivery: {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  accountId: string;
  organisationId: string;
}): DeliveryLabel {
  return {
    deliveryId: delivery.id,
    endpointId: delivery.endpointId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    accountId: delivery.accountId,
    organisationId: delivery.organisationId,
  };
}

/** Registers the webhook search attributes on a namespace when missing; answers the names it added. */
export async function ensureSearchAttributes(
  connection: {
    operatorService: {
      listSearchAttributes(request: { namespace: string }): Promise<unknown>;
      addSearchAttributes(request: { namespace: string; searchAttributes: Record<string, number> }): Promise<unknown>;
    };
  },
  namespace: string,
): Promise<string[]> {
  const listed = (await connection.operatorService.listSearchAttributes({ namespace })) as { customAttributes?: Record<string, unknown> };
  const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !(name in (listed.customAttributes ?? {})));
  if (missing.length === 0) return [];
  // 7 = INDEXED_VALUE_TYPE_KEYWORD_LIST in temporal.api.enums.v1.
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((name) => [name, 7])),
  });
  return missing;
}

export interface WebhookAttributes {
  deliveryIds?: readonly string[];
  endpointIds?: readonly string[];
  eventIds?: readonly string[];
}

function attributesOf(labels: readonly DeliveryLabel[]): WebhookAttributes {
  return {
    deliveryIds: labels.map((l) => l.deliveryId),
    endpointIds: labels.map((l) => l.endpointId),
    eventIds: labels.map((l) => l.eventId),
  };
}

function searchAttributes(attributes: WebhookAttributes): SearchAttributePair[] {
  return (Object.keys(SEARCH_ATTRIBUTES) as Array<keyof typeof SEARCH_ATTRIBUTES>)
    .filter((name) => attributes[name]?.length)
    .map((name) => ({ key: SEARCH_ATTRIBUTES[name], value: [...new Set(attributes[name])] }));
}

/** The memo of a single-delivery workflow (what the Temporal UI shows on its page). */
export function deliveryMemo(label: DeliveryLabel): Record<string, string> {
  return {
    deliveryId: label.deliveryId,
    endpointId: label.endpointId,
    eventType: label.eventType,
    accountId: label.accountId,
    organisationId: label.organisationId,
  };
}

let attributesRefusedUntil = 0;
let oversizeLoggedAt = 0;

/**
 * Why the server refused a start's search attributes, from gRPC INVALID_ARGUMENT as the client
 * reports it (directly or as the cause): a value longer than the server allows (a batch's delivery
 * ids beyond frontend.searchAttributesSizeOfValueLimit), or attributes the namespace lacks.
 */
function searchAttributeRefusal(error: unknown): 'too large' | 'unregistered' | undefined {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    const text = String(e.message);
    if (e.code === 3 && /search attribute/i.test(text)) return /exceeds (?:total )?size limit/i.test(text) ? 'too large' : 'unregistered';
  }
  return undefined;
}

export type StartResult = 'started' | 'already started';

/**
 * Starts a webhook workflow with its search attributes. A workflow id that ran before
 * (REJECT_DUPLICATE, the default here) or runs now answers 'already started': every webhook
 * workflow id is a business id, so a repeated start is harmless and counts as done.
 */
export async function startWebhookWorkflow<Name extends WebhookWorkflowName>(
  client: Client,
  logger: Logger,
  workflowType: Name,
  attributes: WebhookAttributes,
  options: Omit<WorkflowStartOptions<WebhookWorkflows[Name]>, 'typedSearchAttributes' | 'searchAttributes'>,
): Promise<StartResult> {
  type Options = WorkflowStartOptions<WebhookWorkflows[Name]>;
  const base = { workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE, ...options } as Options;
  try {
    const withAttributes: Options =
      Date.now() < attributesRefusedUntil ? base : { ...base, typedSearchAttributes: searchAttributes(attributes) };
    try {
      await client.workflow.start<WebhookWorkflows[Name]>(workflowType, withAttributes);
    } catch (error) {
      const refusal = searchAttributeRefusal(error);
      if (!refusal) throw error;
      if (refusal === 'unregistered') {
        attributesRefusedUntil = Date.now() + 60_000;
        logger.error(
          { err: error, namespace: client.options.namespace },
          `webhook search attributes are not registered (${SEARCH_ATTRIBUTE_NAMES.join(', ')}): workflows start without them; register them (docs/operating.md, "Watching deliveries")`,
        );
      } else if (Date.now() - oversizeLoggedAt > 60_000) {
        // Only this workflow goes without them: a smaller batch's still fit.
        oversizeLoggedAt = Date.now();
        logger.error(
          { err: error, namespace: client.options.namespace, workflowId: options.workflowId },
          'a webhook batch’s search attributes exceed what the Temporal server accepts: such batches start without them; lower WEBHOOK_BATCH_SIZE (64 fit Temporal’s default limit) or raise the server’s frontend.searchAttributesSizeOfValueLimit (docs/operating.md, "Watching deliveries")',
        );
      }
      await client.workflow.start<WebhookWorkflows[Name]>(workflowType, base);
    }
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already started';
    throw error;
  }
}

export interface WebhookWorkflowSettings {
  taskQueue: string;
  /** WEBHOOK_RETRY_SCHEDULE when the workflow starts. */
  scheduleMs: number[];
  attemptTimeoutMs: number;
}

/** The batch (whb_) of first attempts: one workflow, one activity (workflows/webhook-batch.ts). */
export function startBatchWorkflow(
  client: Client,
  logger: Logger,
  settings: WebhookWorkflowSettings,
  batchId: string,
  labels: readonly DeliveryLabel[],
) {
  return startWebhookWorkflow(client, logger, 'deliverBatch', attributesOf(labels), {
    taskQueue: settings.taskQueue,
    workflowId: batchId,
    args: [{ batchId, scheduleMs: settings.scheduleMs, attemptTimeoutMs: settings.attemptTimeoutMs }],
    // Compact: the search attributes name every delivery, endpoint and event already.
    memo: {
      batchId,
      deliveryCount: labels.length,
      organisationIds: [...new Set(labels.map((l) => l.organisationId))],
      accountIds: [...new Set(labels.map((l) => l.accountId))],
      eventTypes: [...new Set(labels.map((l) => l.eventType))],
    },
  });
}

/**
 * The retry workflow of a delivery whose first attempt failed (workflow id = the delivery id, as
 * before batches): attempt 2 after `delayMs` (a server-side start delay), then the rest of the schedule.
 */
export function startRetryWorkflow(
  client: Client,
  logger: Logger,
  settings: WebhookWorkflowSettings,
  label: DeliveryLabel,
  delayMs: number,
) {
  return startWebhookWorkflow(client, logger, 'deliverWebhook', attributesOf([label]), {
    taskQueue: settings.taskQueue,
    workflowId: label.deliveryId,
    args: [{ deliveryId: label.deliveryId, scheduleMs: settings.scheduleMs, attemptTimeoutMs: settings.attemptTimeoutMs, fromAttempt: 2 }],
    startDelay: delayMs,
    memo: deliveryMemo(label),
  });
}

/** A resend (whm_): one manual attempt under the attempt id given. */
export function startResendWorkflow(
  client: Client,
  logger: Logger,
  taskQueue: string,
  resendId: string,
  label: DeliveryLabel,
  attemptId: string,
) {
  return startWebhookWorkflow(client, logger, 'resendWebhookDelivery', attributesOf([label]), {
    taskQueue,
    workflowId: resendId,
    args: [{ deliveryId: label.deliveryId, attemptId }],
    memo: { ...deliveryMemo(label), attemptId },
  });
}

/**
 * The recovery of an endpoint (whr_ + the endpoint's id): one at a time per endpoint. Another may
 * start once it has closed; while it runs, a second start answers 'already started'.
 */
export function startRecoveryWorkflow(
  client: Client,
  logger: Logger,
  taskQueue: string,
  input: RecoverWebhookEndpointInput & { accountId: string },
) {
  const { accountId, ...args } = input;
  return startWebhookWorkflow(
    client,
    logger,
    'recoverWebhookEndpoint',
    { endpointIds: [input.endpointId] },
    {
      taskQueue,
      workflowId: recoveryWorkflowId(input.endpointId),
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      args: [args],
      memo: {
        organisationId: input.organisationId,
        accountId,
        endpointId: input.endpointId,
        since: input.since,
        until: input.until,
        includeOtherUrls: input.includeOtherUrls ?? false,
      },
    },
  );
}

/**
 * Whether a recovery of the endpoint runs now, asked before one is counted and started: a request
 * refused because one runs must not use up the hourly allowance or touch the circuit.
 */
export async function recoveryRunning(client: Client, endpointId: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(recoveryWorkflowId(endpointId)).describe();
    return description.status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

export function recoveryWorkflowId(endpointId: string): string {
  return `whr_${endpointId.replace(/^whe_/, '')}`;
}
