import type { Database } from '../db/client.ts';
import { systemRows } from '../db/sql.ts';
import { Prisma } from '../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import { newId } from '../ids.ts';

/**
 * Writes attempt records in groups: every attempt answered while the previous write was under way
 * goes into the next one statement (group commit), so a busy worker writes tens of attempts per
 * round trip and an idle one writes each at once. Measured with bench/webhooks.ts: one statement
 * per attempt cost more PostgreSQL and worker CPU than the HTTP exchange itself.
 *
 * One statement records a whole group, all of it or none of it: for each attempt it inserts the
 * attempt at the next position of its delivery (the deliveries' rows locked meanwhile, in id order),
 * bumps attemptCount and settles the delivery as the attempt decides, and gives its slot back; per
 * endpoint it moves the circuit breaker and the failure clock by the group's outcomes in the order
 * they were answered, and disables the endpoint once every attempt has failed for
 * WEBHOOK_DISABLE_AFTER. An attempt that exists already (another execution got there first) is not
 * inserted, and its caller answers from that record. A group holds at most one attempt per
 * delivery; a second waits for the next group.
 */

export interface AttemptRow {
  attemptId: string;
  deliveryId: string;
  organisationId: string;
  endpointId: string;
  scheduledAttempt: number | null;
  attemptedAt: Date;
  statusCode: number | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
  ok: boolean;
  /** How the delivery ends with this attempt, if it does. */
  settle: 'succeeded' | 'failed' | null;
  leaseId: string;
  /** See Outcome.effect (deliver.ts). */
  effect: 'sent' | 'short-circuited' | 'none';
}

export interface RecordedRow {
  /** False when the attempt was recorded already, by another execution. */
  inserted: boolean;
  /** Set when this group disabled the attempt's endpoint. */
  disabled?: { reason: string; failingSince: Date | null };
}

type RecorderConfig = Pick<Config, 'WEBHOOK_BREAKER_THRESHOLD' | 'WEBHOOK_BREAKER_COOLDOWN' | 'WEBHOOK_DISABLE_AFTER'>;

interface Pending {
  row: AttemptRow;
  resolve(result: RecordedRow): void;
  reject(error: unknown): void;
}

const GROUP_LIMIT = 100;
const CONCURRENT_WRITES = 2;

export class AttemptRecorder {
  #queue: Pending[] = [];
  #writing = 0;
  #scheduled = false;

  constructor(
    readonly db: Database,
    readonly config: RecorderConfig,
  ) {}

  record(row: AttemptRow): Promise<RecordedRow> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ row, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#writing >= CONCURRENT_WRITES || this.#queue.length === 0) return;
    this.#scheduled = true;
    // The rest of this turn's answers join the group.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#write();
    });
  }

  async #write(): Promise<void> {
    const group: Pending[] = [];
    const rest: Pending[] = [];
    const deliveries = new Set<string>();
    for (const pending of this.#queue) {
      if (group.length < GROUP_LIMIT && !deliveries.has(pending.row.deliveryId)) {
        deliveries.add(pending.row.deliveryId);
        group.push(pending);
      } else rest.push(pending);
    }
    this.#queue = rest;
    if (group.length === 0) return;
    this.#writing += 1;
    this.#schedule();
    try {
      const results = await this.#statement(group.map((p) => p.row));
      for (const pending of group) pending.resolve(results.get(pending.row.attemptId)!);
    } catch (error) {
      for (const pending of group) pending.reject(error);
    } finally {
      this.#writing -= 1;
      this.#schedule();
    }
  }

  async #statement(rows: AttemptRow[]): Promise<Map<string, RecordedRow>> {
    const { config } = this;
    const now = new Date();
    const endpoints = endpointOutcomes(rows);
    const disabledPrefix = `Every delivery attempt failed for ${describeDuration(config.WEBHOOK_DISABLE_AFTER)} (since `;
    const disabledSuffix = '); it was disabled automatically. Enable it again (PATCH enabled: true) once it answers 2xx.';
    const disableBefore = new Date(now.getTime() - config.WEBHOOK_DISABLE_AFTER);
    const openUntil = new Date(now.getTime() + config.WEBHOOK_BREAKER_COOLDOWN);
    const answer = await systemRows<{ kind: 'attempt' | 'disabled'; id: string; reason: string | null; since: Date | null }>(
      this.db,
      Prisma.sql`
      WITH input AS (
        SELECT * FROM unnest(
          ${rows.map((r) => r.attemptId)}::text[], ${rows.map((r) => r.deliveryId)}::text[], ${rows.map((r) => r.organisationId)}::text[],
          ${rows.map((r) => r.scheduledAttempt)}::int[], ${rows.map((r) => r.attemptedAt.toISOString())}::timestamptz[],
          ${rows.map((r) => r.statusCode)}::int[], ${rows.map((r) => r.responseBody)}::text[], ${rows.map((r) => r.durationMs)}::int[],
          ${rows.map((r) => r.error)}::text[], ${rows.map((r) => r.settle)}::text[]
        ) AS i(attempt_id, delivery_id, organisation_id, scheduled_attempt, attempted_at, status_code, response_body, duration_ms, error, settle)
      ), locked AS (
        SELECT d.id, d."attemptCount" FROM webhook_deliveries d
         WHERE d.id IN (SELECT delivery_id FROM input)
         ORDER BY d.id
           FOR UPDATE
      ), inserted AS (
        INSERT INTO webhook_attempts
               (id, "organisationId", "deliveryId", "attemptNumber", "scheduledAttempt", trigger, "attemptedAt",
                "statusCode", "responseBody", "durationMs", error)
        SELECT i.attempt_id, i.organisation_id, i.delivery_id, l."attemptCount" + 1, i.scheduled_attempt,
               (CASE WHEN i.scheduled_attempt IS NULL THEN 'manual' ELSE 'scheduled' END)::attempt_trigger, i.attempted_at,
               i.status_code, i.response_body, i.duration_ms, i.error
          FROM input i JOIN locked l ON l.id = i.delivery_id
        ON CONFLICT DO NOTHING
        RETURNING id
      ), released AS (
        DELETE FROM webhook_leases WHERE id = ANY(${rows.map((r) => r.leaseId)}::text[])
      ), settled AS (
        UPDATE webhook_deliveries d
           SET "attemptCount" = d."attemptCount" + 1,
               status = COALESCE(i.settle::delivery_status, d.status),
               "completedAt" = CASE WHEN i.settle IS NULL THEN d."completedAt" ELSE ${now}::timestamptz END,
               "nextAttemptAt" = CASE WHEN i.settle IS NULL THEN d."nextAttemptAt" ELSE NULL END,
               "updatedAt" = ${now}::timestamptz
          FROM input i
         WHERE d.id = i.delivery_id AND d."organisationId" = i.organisation_id
           AND i.attempt_id IN (SELECT id FROM inserted)
      ), outcomes AS (
        SELECT * FROM unnest(
          ${endpoints.map((e) => e.endpointId)}::text[], ${endpoints.map((e) => e.organisationId)}::text[],
          ${endpoints.map((e) => e.hadSuccess)}::boolean[], ${endpoints.map((e) => e.failures)}::int[],
          ${endpoints.map((e) => e.firstFailureAt?.toISOString() ?? null)}::timestamptz[], ${endpoints.map((e) => e.anyFailure)}::boolean[],
          ${endpoints.map(() => newId('auditEntry'))}::text[]
        ) AS x(endpoint_id, organisation_id, had_success, failures, first_failure_at, any_failure, audit_id)
      ), before AS (
        SELECT e.id, e.enabled AS was_enabled, e."disabledReason" AS was_reason
          FROM webhook_endpoints e WHERE e.id IN (SELECT endpoint_id FROM outcomes)
      ), endpoint AS (
        UPDATE webhook_endpoints e
           SET "consecutiveFailures" = CASE WHEN x.had_success THEN x.failures ELSE e."consecutiveFailures" + x.failures END,
               "failingSince" = CASE WHEN x.had_success THEN x.first_failure_at ELSE COALESCE(e."failingSince", x.first_failure_at) END,
               "circuitOpenUntil" = CASE
                 WHEN x.failures > 0 AND (CASE WHEN x.had_success THEN x.failures ELSE e."consecutiveFailures" + x.failures END) >= ${config.WEBHOOK_BREAKER_THRESHOLD}::int
                   THEN ${openUntil}::timestamptz
                 WHEN x.had_success THEN NULL
                 ELSE e."circuitOpenUntil" END,
               enabled = e.enabled AND NOT (x.any_failure AND
                 (CASE WHEN x.had_success THEN x.first_failure_at ELSE COALESCE(e."failingSince", x.first_failure_at) END) <= ${disableBefore}::timestamptz),
               "disabledReason" = CASE
                 WHEN e.enabled AND x.any_failure AND
                      (CASE WHEN x.had_success THEN x.first_failure_at ELSE COALESCE(e."failingSince", x.first_failure_at) END) <= ${disableBefore}::timestamptz
                   THEN ${disabledPrefix} || to_char(
                          (CASE WHEN x.had_success THEN x.first_failure_at ELSE COALESCE(e."failingSince", x.first_failure_at) END) AT TIME ZONE 'UTC',
                          'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ${disabledSuffix}
                 ELSE e."disabledReason" END,
               "updatedAt" = CASE
                 WHEN e.enabled AND x.any_failure AND
                      (CASE WHEN x.had_success THEN x.first_failure_at ELSE COALESCE(e."failingSince", x.first_failure_at) END) <= ${disableBefore}::timestamptz
                   THEN ${now}::timestamptz
                 ELSE e."updatedAt" END
          FROM outcomes x, before b
         WHERE e.id = x.endpoint_id AND e."organisationId" = x.organisation_id AND b.id = e.id
           AND (x.any_failure OR e."consecutiveFailures" > 0 OR e."failingSince" IS NOT NULL OR e."circuitOpenUntil" IS NOT NULL)
        RETURNING e.id, e."organisationId", e."accountId", b.was_enabled AND NOT e.enabled AS disabled_now, b.was_reason,
                  e."disabledReason", e."failingSince", x.audit_id
      ), audited AS (
        -- The service disabled it: the audit log says so beside the changes people make (actor system).
        INSERT INTO audit_entries (id, "organisationId", "accountId", "actorKind", "actorId", action, "targetType", "targetId", changes)
        SELECT audit_id, "organisationId", "accountId", 'system', NULL, 'webhook_endpoint.disabled', 'webhook_endpoint', id,
               jsonb_build_object('enabled', jsonb_build_object('before', true, 'after', false),
                                  'disabledReason', jsonb_build_object('before', was_reason, 'after', "disabledReason"))
          FROM endpoint WHERE disabled_now
      )
      SELECT 'attempt' AS kind, id, NULL::text AS reason, NULL::timestamptz AS since FROM inserted
      UNION ALL
      SELECT 'disabled', id, "disabledReason", "failingSince" FROM endpoint WHERE disabled_now`,
    );
    const inserted = new Set(answer.filter((a) => a.kind === 'attempt').map((a) => a.id));
    const disabled = new Map(answer.filter((a) => a.kind === 'disabled').map((a) => [a.id, { reason: a.reason!, failingSince: a.since }]));
    const results = new Map<string, RecordedRow>();
    for (const row of rows) {
      const endpoint = !row.ok && row.effect !== 'none' ? disabled.get(row.endpointId) : undefined;
      results.set(row.attemptId, { inserted: inserted.has(row.attemptId), ...(endpoint ? { disabled: endpoint } : {}) });
    }
    return results;
  }
}

interface EndpointOutcome {
  endpointId: string;
  organisationId: string;
  /** A success in the group: the breaker and the failure clock start again from it. */
  hadSuccess: boolean;
  /** Failed attempts that were sent, after the last success (or all, without one). */
  failures: number;
  /** The first failure (sent or not) after the last success. */
  firstFailureAt: Date | null;
  anyFailure: boolean;
}

/** What a group's attempts say about each endpoint, in the order they were answered. */
function endpointOutcomes(rows: readonly AttemptRow[]): EndpointOutcome[] {
  const byEndpoint = new Map<string, EndpointOutcome>();
  for (const row of rows) {
    if (row.effect === 'none') continue;
    let outcome = byEndpoint.get(row.endpointId);
    if (!outcome) {
      outcome = {
        endpointId: row.endpointId,
        organisationId: row.organisationId,
        hadSuccess: false,
        failures: 0,
        firstFailureAt: null,
        anyFailure: false,
      };
      byEndpoint.set(row.endpointId, outcome);
    }
    if (row.ok) Object.assign(outcome, { hadSuccess: true, failures: 0, firstFailureAt: null, anyFailure: false });
    else {
      if (row.effect === 'sent') outcome.failures += 1;
      outcome.firstFailureAt ??= row.attemptedAt;
      outcome.anyFailure = true;
    }
  }
  return [...byEndpoint.values()];
}

/** 5d, 36h, 90m, 2s: how WEBHOOK_DISABLE_AFTER reads in a disabledReason. */
export function describeDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

const recorders = new WeakMap<Database, Map<string, AttemptRecorder>>();

/** The recorder of this database handle and configuration (one per process, so groups span batches). */
export function recorderFor(db: Database, config: RecorderConfig): AttemptRecorder {
  const key = `${config.WEBHOOK_BREAKER_THRESHOLD}/${config.WEBHOOK_BREAKER_COOLDOWN}/${config.WEBHOOK_DISABLE_AFTER}`;
  let byConfig = recorders.get(db);
  if (!byConfig) recorders.set(db, (byConfig = new Map<string, AttemptRecorder>()));
  let recorder = byConfig.get(key);
  if (!recorder) byConfig.set(key, (recorder = new AttemptRecorder(db, config)));
  return recorder;
}
