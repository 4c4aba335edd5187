import { createHash } from 'node:crypto';
import type { Database } from '../db/client.ts';
import { ID_PREFIXES } from '../ids.ts';
import {
  CIRCUIT_OPEN,
  loadDeliveries,
  makeAttempt,
  recordAttempt,
  SecretCache,
  stopped,
  stopReason,
  type AttemptSpec,
  type DeliverDependencies,
  type LoadedDelivery,
} from './deliver.ts';
import { leaseId, waitForSlots } from './slots.ts';

/**
 * Manual attempts (trigger `manual`): a resend of one delivery, and the recovery of every failed
 * delivery of an endpoint since a time. They are attempts like the scheduled ones (same headers,
 * the same Service-Event-Id and Service-Delivery-Id, a fresh signature, slots and breaker), with
 * three differences: they take the next position among the delivery's attempts without being part
 * of its schedule; one that succeeds settles the delivery as succeeded (a failed one leaves it as
 * it was, and is not retried); and they wait for a slot as long as it takes rather than being put
 * back. Each is recorded under an id fixed before it is sent, so a retried activity replays it.
 */

export interface ManualHooks {
  /** Tells Temporal the activity is alive, with how far it got (a retry resumes from there). */
  heartbeat(progress?: unknown): void;
  /** The progress of the last execution that heartbeated, when this one is a retry. */
  progress?: unknown;
}

export interface ManualAttemptResult {
  deliveryId: string;
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

const SLOT_POLL_MS = 10_000;

async function manualAttempt(
  deps: DeliverDependencies,
  delivery: LoadedDelivery,
  attemptId: string,
  secrets: SecretCache,
  hooks: ManualHooks,
): Promise<ManualAttemptResult> {
  const answer = (r: { ok: boolean; statusCode: number | null; error: string | null }) => ({
    deliveryId: delivery.id,
    ok: r.ok,
    statusCode: r.statusCode,
    error: r.error,
  });
  if (delivery.recorded) {
    const { statusCode, error } = delivery.recorded;
    return answer({ ok: statusCode !== null && statusCode >= 200 && statusCode < 300, statusCode, error });
  }
  const spec: AttemptSpec = { attemptId, scheduledAttempt: null, leaseId: leaseId(delivery.id, attemptId), lastAttempt: false };
  const stop = stopReason(delivery);
  if (stop) return answer(await recordAttempt(deps, delivery, spec, stopped(stop)));
  const request = [
    { leaseId: spec.leaseId, deliveryId: delivery.id, endpointId: delivery.endpointId, organisationId: delivery.organisationId },
  ];
  let slot = 'busy';
  while (slot === 'busy') {
    const waited = Date.now();
    slot =
      (await waitForSlots(deps.db, deps.config, request, { patienceMs: SLOT_POLL_MS, maxMs: SLOT_POLL_MS })).get(spec.leaseId) ?? 'busy';
    // Gave up at once (a slow endpoint's line is long): wait a while before joining it again.
    if (slot === 'busy' && Date.now() - waited < 1_000) await new Promise((resolve) => setTimeout(resolve, 1_000));
    hooks.heartbeat(hooks.progress);
  }
  const outcome = slot === 'open' ? CIRCUIT_OPEN : await makeAttempt(deps, delivery, secrets);
  return answer(await recordAttempt(deps, delivery, spec, outcome));
}

/** POST /webhook-deliveries/{id}/resend: one manual attempt, under the attempt id the API chose. */
export async function resendDelivery(
  deps: DeliverDependencies,
  input: { deliveryId: string; attemptId: string },
  hooks: ManualHooks,
): Promise<ManualAttemptResult> {
  const [delivery] = await loadDeliveries(deps.db, { ids: [input.deliveryId], attemptIds: [input.attemptId] });
  if (!delivery) return { deliveryId: input.deliveryId, ok: false, statusCode: null, error: 'delivery not found' };
  return manualAttempt(deps, delivery, input.attemptId, new SecretCache(deps.encryptionKey), hooks);
}

export interface RecoverInput {
  /** The recovery (its workflow's run id): names the attempts it makes. */
  recoveryRunId: string;
  organisationId: string;
  endpointId: string;
  /** ISO 8601: deliveries created from this time ... */
  since: string;
  /** ... up to this one (when the recovery was asked for). */
  until: string;
}

export interface RecoverResult {
  attempted: number;
  succeeded: number;
}

interface RecoverProgress {
  after?: { createdAt: string; id: string };
  attempted: number;
  succeeded: number;
}

const RECOVER_PAGE = 100;

/**
 * POST /webhook-endpoints/{id}/recover: a manual attempt for every delivery of the endpoint created
 * in [since, until] that is failed when the recovery reaches it, oldest first, a page at a time
 * (the page's attempts concurrently, within the endpoint's slots). The position reached is the
 * heartbeat's progress, so a retried activity goes on from there.
 */
export async function recoverFailedDeliveries(deps: DeliverDependencies, input: RecoverInput, hooks: ManualHooks): Promise<RecoverResult> {
  const progress: RecoverProgress = { attempted: 0, succeeded: 0, ...(hooks.progress as RecoverProgress | undefined) };
  const secrets = new SecretCache(deps.encryptionKey);
  const report = { ...hooks, progress };
  for (;;) {
    const ids = await failedPage(deps.db, input, progress.after);
    if (ids.length === 0) break;
    const attemptIds = ids.map((id) => recoveryAttemptId(input.recoveryRunId, id.id));
    const deliveries = await loadDeliveries(deps.db, { ids: ids.map((d) => d.id), attemptIds });
    const results = await Promise.all(
      deliveries.map((delivery) => manualAttempt(deps, delivery, recoveryAttemptId(input.recoveryRunId, delivery.id), secrets, report)),
    );
    progress.attempted += results.length;
    progress.succeeded += results.filter((r) => r.ok).length;
    const last = ids.at(-1)!;
    progress.after = { createdAt: last.createdAt.toISOString(), id: last.id };
    hooks.heartbeat(progress);
  }
  return { attempted: progress.attempted, succeeded: progress.succeeded };
}

async function failedPage(
  db: Database,
  input: RecoverInput,
  after: RecoverProgress['after'],
): Promise<Array<{ id: string; createdAt: Date }>> {
  const afterAt = after ? new Date(after.createdAt) : new Date(0);
  const afterId = after?.id ?? '';
  return db.$queryRaw<Array<{ id: string; createdAt: Date }>>`
    SELECT id, "createdAt" FROM webhook_deliveries
     WHERE "organisationId" = ${input.organisationId} AND "endpointId" = ${input.endpointId} AND status = 'failed'
       AND "createdAt" >= ${new Date(input.since)} AND "createdAt" <= ${new Date(input.until)}
       AND ("createdAt", id) > (${afterAt}, ${afterId})
     ORDER BY "createdAt", id
     LIMIT ${RECOVER_PAGE}`;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The id of the attempt a recovery makes for a delivery: the same on every retry of the recovery, another for the next recovery. */
export function recoveryAttemptId(recoveryRunId: string, deliveryId: string): string {
  const bytes = createHash('sha512').update(`${recoveryRunId}:${deliveryId}`).digest();
  let out = '';
  for (const byte of bytes) {
    if ((byte & 63) < 62) out += BASE62[byte & 63];
    if (out.length === 22) break;
  }
  return `${ID_PREFIXES.webhookAttempt}_${out}`;
}
