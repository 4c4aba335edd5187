-- The audit log: one row per change a person, an API key, an embed session or the service made to
-- the organisation's configuration or money (src/services/audit.ts), inserted by the changing
-- transaction, so a rolled-back change leaves none. No foreign keys: an entry outlives what it names.
CREATE TABLE "audit_entries" (
  "id" TEXT NOT NULL,
  "organisationId" TEXT NOT NULL,
  "accountId" TEXT,
  "actorKind" TEXT NOT NULL,
  "actorId" TEXT,
  "action" TEXT NOT NULL,
  "targetType" TEXT NOT NULL,
  "targetId" TEXT NOT NULL,
  "changes" JSONB NOT NULL DEFAULT '{}',
  "requestId" TEXT,
  "clientAddress" TEXT,
  "userAgent" TEXT,
  "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

  CONSTRAINT "audit_entries_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "audit_entries_actor_kind" CHECK ("actorKind" IN ('user', 'api_key', 'embed_session', 'system')),
  CONSTRAINT "audit_entries_changes_object" CHECK (jsonb_typeof("changes") = 'object')
);

CREATE INDEX "audit_entries_organisationId_createdAt_id_idx" ON "audit_entries"("organisationId", "createdAt" DESC, "id" DESC);
CREATE INDEX "audit_entries_organisationId_targetType_targetId_idx" ON "audit_entries"("organisationId", "targetType", "targetId");
CREATE INDEX "audit_entries_organisationId_actorKind_actorId_idx" ON "audit_entries"("organisationId", "actorKind", "actorId");
CREATE INDEX "audit_entries_createdAt_idx" ON "audit_entries"("createdAt");

-- Entries are never changed, and deleted only by the worker's pruning of entries past their
-- retention, which says so with SET LOCAL service.audit_prune = 'on' in its own transaction
-- (pruneAuditEntries in src/services/audit.ts; test/platform/audit-log.test.ts tries each way).
CREATE FUNCTION "audit_entries_refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('service.audit_prune', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'audit entries cannot be changed or deleted (%)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TRIGGER "audit_entries_immutable" BEFORE UPDATE OR DELETE OR TRUNCATE ON "audit_entries"
  FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_refuse_change();
