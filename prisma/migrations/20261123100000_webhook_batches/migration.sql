-- Webhook delivery at scale. First attempts go out in batches (whb_), attempts in flight
-- are counted in PostgreSQL so every worker process honours the same per-endpoint and
-- per-organisation bounds, and each endpoint carries its circuit breaker, its secret rotation and
-- why the service disabled it.

-- A scheduled attempt is keyed by its place in the retry schedule; attemptNumber becomes the
-- position among all attempts (manual ones included). Every existing attempt is a scheduled one.
ALTER TABLE "webhook_attempts" ADD COLUMN "scheduledAttempt" INTEGER;
UPDATE "webhook_attempts" SET "scheduledAttempt" = "attemptNumber" WHERE "trigger" = 'scheduled';
CREATE UNIQUE INDEX "webhook_attempts_deliveryId_scheduledAttempt_key" ON "webhook_attempts"("deliveryId", "scheduledAttempt");

ALTER TABLE "webhook_deliveries" ADD COLUMN "availableAt" TIMESTAMPTZ(3),
ADD COLUMN "batchId" TEXT;
CREATE INDEX "webhook_deliveries_batchId_idx" ON "webhook_deliveries"("batchId");

ALTER TABLE "webhook_endpoints" ADD COLUMN "circuitOpenUntil" TIMESTAMPTZ(3),
ADD COLUMN "consecutiveFailures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "disabledReason" TEXT,
ADD COLUMN "failingSince" TIMESTAMPTZ(3),
ADD COLUMN "previousSecretCiphertext" TEXT,
ADD COLUMN "previousSecretExpiresAt" TIMESTAMPTZ(3);

CREATE TABLE "webhook_leases" (
    "id" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_leases_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "webhook_leases_endpointId_idx" ON "webhook_leases"("endpointId");
CREATE INDEX "webhook_leases_organisationId_idx" ON "webhook_leases"("organisationId");

-- The worker prunes history older than WEBHOOK_RETENTION by the events' age.
CREATE INDEX "webhook_events_createdAt_idx" ON "webhook_events"("createdAt");

CREATE TABLE "webhook_task_runs" (
    "name" TEXT NOT NULL,
    "lastRunAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_task_runs_pkey" PRIMARY KEY ("name")
);

-- Grants attempt slots (webhook_leases rows) to the requested attempts, in the order given, while
-- their endpoint and organisation stay within their bounds. One call per batch, from any worker:
--   * the advisory locks of every endpoint and organisation concerned are taken in one global order
--     (ascending key), so concurrent callers never deadlock, and they serialise the check-and-insert;
--   * the counting statement runs after the locks, so it sees every lease committed before (each
--     statement of a plpgsql function takes a fresh snapshot under READ COMMITTED);
--   * a lease id held already (an earlier execution of the same attempt, e.g. on a worker that died)
--     is granted again and does not count against itself;
--   * an endpoint whose circuit is open answers 'open'; a tripped one whose cool-down passed
--     (half-open) admits one attempt at a time.
-- Answers one row per requested lease: 'granted', 'busy' or 'open' (none for an unknown delivery).
CREATE FUNCTION webhook_acquire_leases(
    p_lease_ids TEXT[],
    p_delivery_ids TEXT[],
    p_endpoint_max INTEGER,
    p_organisation_max INTEGER,
    p_breaker_threshold INTEGER,
    p_lease_ms INTEGER
) RETURNS TABLE (out_lease_id TEXT, out_outcome TEXT)
LANGUAGE plpgsql AS $fn$
DECLARE
    lock_key BIGINT;
BEGIN
    FOR lock_key IN
        SELECT DISTINCT k FROM (
            SELECT hashtextextended('webhook endpoint ' || d."endpointId", 0) AS k
              FROM webhook_deliveries d WHERE d.id = ANY (p_delivery_ids)
            UNION
            SELECT hashtextextended('webhook organisation ' || d."organisationId", 0)
              FROM webhook_deliveries d WHERE d.id = ANY (p_delivery_ids)
        ) keys
        ORDER BY k
    LOOP
        PERFORM pg_advisory_xact_lock(lock_key);
    END LOOP;

    RETURN QUERY
    WITH request AS (
        SELECT r.lease_id, r.ord, d."endpointId" AS endpoint_id, d."organisationId" AS organisation_id,
               coalesce(e."circuitOpenUntil" > clock_timestamp(), false) AS open,
               CASE WHEN e."consecutiveFailures" >= p_breaker_threshold THEN 1 ELSE p_endpoint_max END AS endpoint_cap
          FROM unnest(p_lease_ids, p_delivery_ids) WITH ORDINALITY AS r(lease_id, delivery_id, ord)
          JOIN webhook_deliveries d ON d.id = r.delivery_id
          JOIN webhook_endpoints e ON e."organisationId" = d."organisationId" AND e.id = d."endpointId"
    ),
    endpoint_used AS (
        SELECT l."endpointId" AS endpoint_id, count(*) AS n
          FROM webhook_leases l
         WHERE l."endpointId" IN (SELECT q.endpoint_id FROM request q)
           AND l."expiresAt" > clock_timestamp() AND l.id <> ALL (p_lease_ids)
         GROUP BY 1
    ),
    organisation_used AS (
        SELECT l."organisationId" AS organisation_id, count(*) AS n
          FROM webhook_leases l
         WHERE l."organisationId" IN (SELECT q.organisation_id FROM request q)
           AND l."expiresAt" > clock_timestamp() AND l.id <> ALL (p_lease_ids)
         GROUP BY 1
    ),
    endpoint_ok AS (
        SELECT b.* FROM (
            SELECT q.*, row_number() OVER (PARTITION BY q.endpoint_id ORDER BY q.ord) AS endpoint_rank
              FROM request q WHERE NOT q.open
        ) b
        LEFT JOIN endpoint_used u ON u.endpoint_id = b.endpoint_id
         WHERE b.endpoint_rank <= b.endpoint_cap - coalesce(u.n, 0)
    ),
    granted AS (
        SELECT g.lease_id, g.endpoint_id, g.organisation_id FROM (
            SELECT o.*, row_number() OVER (PARTITION BY o.organisation_id ORDER BY o.ord) AS organisation_rank
              FROM endpoint_ok o
        ) g
        LEFT JOIN organisation_used u ON u.organisation_id = g.organisation_id
         WHERE g.organisation_rank <= p_organisation_max - coalesce(u.n, 0)
    ),
    leased AS (
        INSERT INTO webhook_leases (id, "endpointId", "organisationId", "expiresAt")
        SELECT g.lease_id, g.endpoint_id, g.organisation_id, clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
          FROM granted g
        ON CONFLICT (id) DO UPDATE SET "expiresAt" = EXCLUDED."expiresAt"
        RETURNING id
    )
    SELECT q.lease_id,
           CASE WHEN q.open THEN 'open' WHEN q.lease_id IN (SELECT l.id FROM leased l) THEN 'granted' ELSE 'busy' END
      FROM request q
     ORDER BY q.ord;
END
$fn$;
