import { query } from './db.ts';
import type { AppRef } from './app.ts';

/** The development outbox (no SMTP_URL), where an invitee or a customer reads their code in tests. */

export interface OutboxRow {
  to: string;
  subject: string;
  text: string;
  meta: Record<string, unknown>;
  createdAt: Date;
}

/** Mail written to the outbox for `to`, oldest first, optionally of one kind (`meta.kind`). */
export async function mailTo(app: AppRef, to: string, kind?: string): Promise<OutboxRow[]> {
  const rows = await query<OutboxRow>(
    app,
    'SELECT "to", subject, text, meta, "createdAt" FROM outbox_messages WHERE "to" = $1 ORDER BY "createdAt", id',
    [to],
  );
  return kind ? rows.filter((row) => row.meta?.kind === kind) : rows;
}

/** The `count`-th mail of `kind` to `to`, waiting for it: some mail is sent after the answer. */
export async function waitForMail(app: AppRef, to: string, kind: string, count = 1, timeoutMs = 5_000): Promise<OutboxRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await mailTo(app, to, kind);
    if (rows.length >= count) return rows[count - 1]!;
    if (Date.now() > deadline) throw new Error(`no ${kind} mail #${count} to ${to}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The code of an invitation as its invitee has it: from the latest mail of that invitation (shown nowhere else). */
export async function mailedInvitationCode(app: AppRef, invitationId: string): Promise<string> {
  const rows = await query<{ code: string }>(
    app,
    `SELECT meta->>'code' AS code FROM outbox_messages WHERE meta->>'invitationId' = $1 ORDER BY "createdAt" DESC, id DESC LIMIT 1`,
    [invitationId],
  );
  if (!rows[0]) throw new Error(`no mail for invitation ${invitationId}`);
  return rows[0].code;
}
