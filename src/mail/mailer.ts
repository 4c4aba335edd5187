import { createTransport, type Transporter } from 'nodemailer';
import type { Config } from '../config.ts';
import { poolOf, type Database } from '../db/client.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** Machine-readable purpose and data, kept in the development outbox (never sent by SMTP). */
  meta?: Record<string, unknown>;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

/**
 * SMTP when SMTP_URL is set; otherwise the development outbox (a table, read with
 * `npm run cli -- mail list`). Message bodies can hold codes, so they are never logged.
 */
export function createMailer(config: Config, db: Database, logger: Logger): Mailer {
  if (config.SMTP_URL) return new SmtpMailer(createTransport(config.SMTP_URL), config.MAIL_FROM, logger);
  return new OutboxMailer(db, logger);
}

export class OutboxMailer implements Mailer {
  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
  ) {}

  async send(message: MailMessage): Promise<void> {
    const id = newId('outboxMessage');
    // One plain statement on the pool rather than Prisma: every confirmed order mails its tickets,
    // and Prisma's ~1 ms of CPU per statement showed in the on-sale. The outbox is not
    // tenant-owned (no organisationId), so src/db/sql.ts's tenant statements do not apply.
    await poolOf(this.db).query({
      name: 'outbox_insert',
      text: 'INSERT INTO outbox_messages (id, "to", subject, text, meta, "createdAt") VALUES ($1, $2, $3, $4, $5::jsonb, now())',
      values: [id, message.to.toLowerCase(), message.subject, message.text, JSON.stringify(message.meta ?? {})],
    });
    this.logger.info({ outboxMessageId: id, subject: message.subject }, 'mail written to the development outbox');
  }

  async close(): Promise<void> {}
}

export class SmtpMailer implements Mailer {
  constructor(
    private readonly transport: Transporter,
    private readonly from: string,
    private readonly logger: Logger,
  ) {}

  async send(message: MailMessage): Promise<void> {
    const info = await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
    this.logger.info({ messageId: info.messageId, subject: message.subject }, 'mail sent');
  }

  close(): Promise<void> {
    this.transport.close();
    return Promise.resolve();
  }
}
