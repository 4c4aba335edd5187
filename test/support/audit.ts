import type { AppRef } from './app.ts';
import { query } from './db.ts';

/** A row of `audit_entries` as a test reads it straight from the table. */
export interface EntryRow {
  id: string;
  organisationId: string;
  accountId: string | null;
  actorKind: string;
  actorId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  changes: Record<string, { before?: unknown; after?: unknown; changed?: true }>;
  requestId: string | null;
  clientAddress: string | null;
  userAgent: string | null;
  createdAt: Date;
}

/** The organisation's entries about `targetId` (of `action` only, when given), oldest first. */
export function auditEntriesOf(app: AppRef, organisationId: string, targetId: string, action?: string): Promise<EntryRow[]> {
  return query<EntryRow>(
    app,
    `SELECT * FROM audit_entries WHERE "organisationId" = $1 AND "targetId" = $2 AND ($3::text IS NULL OR action = $3) ORDER BY "createdAt", id`,
    [organisationId, targetId, action ?? null],
  );
}
