import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';

/** With SMTP_URL set, mail goes to a real SMTP server (an in-process one here), not the outbox. */
const received: Array<{ from: string; to: string[]; raw: string }> = [];
let smtp: SMTPServer;
let org: TestOrganisation;

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});
// Started once the SMTP server above listens (hooks run in order), stopped before it closes.
const app = useTestApp(() => ({
  SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
  MAIL_FROM: 'Tickets <tickets@example.test>',
}));
beforeAll(async () => {
  org = await createOrganisation(app, 'smtp');
});

it('sends the invitation through SMTP with the redemption link, and writes nothing to the outbox', async () => {
  const res = await api(app, 'POST', '/v1/user-invitations', {
    token: org.adminToken,
    org: org.slug,
    body: { organisationId: org.organisation.id, email: 'new.colleague@example.test' },
  });
  expect(res.status).toBe(201);
  expect(received).toHaveLength(1);
  expect(received[0]!.from).toBe('tickets@example.test');
  expect(received[0]!.to).toEqual(['new.colleague@example.test']);
  const body = received[0]!.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  // The code is only in the mail; the API shows a hint of it (its first characters).
  const code = /invite\?code=([A-Za-z0-9_-]{43})/.exec(body)?.[1];
  expect(code).toBeDefined();
  expect(res.body.invitation.code).toBe(`${code!.slice(0, 4)}…`);
  const outbox = await query<{ count: string }>(app, 'SELECT count(*) FROM outbox_messages');
  expect(outbox[0]!.count).toBe('0');
});
