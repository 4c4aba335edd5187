import type { Order } from '../../generated/prisma/client.ts';
import type { Mailer } from '../../mail/mailer.ts';

/** The mail that sends a customer the tickets of their confirmed order, and the passes it names. */

export interface ConfirmedLine {
  id: string;
  ticketTypeId: string;
  occurrenceId: string;
  quantity: number;
  /** The line's total in minor units of `currency`, as the order is charged. */
  totalAmount: number;
  currency: string;
  ticketTypeName: string;
  eventName: string;
  startsAt: string;
}

/** A pass as issued, with its line: what ticket.issued and the tickets' mail name. */
export interface IssuedPass {
  id: string;
  organisationId: string;
  accountId: string;
  orderId: string;
  lineItemId: string;
  customerId: string;
  ticketTypeId: string;
  occurrenceId: string;
  code: string;
  status: 'issued';
  line: ConfirmedLine;
}

/** The customer's tickets: one code per pass (also readable with a customer token, GET /live/sales/me/orders). */
export async function mailTickets(mailer: Mailer, order: Order, email: string, passes: readonly IssuedPass[]): Promise<void> {
  await mailer.send({
    to: email,
    subject: `Your tickets, order ${order.orderNumber}`,
    text: [
      `Order ${order.orderNumber} is confirmed. Show these codes at the door:`,
      '',
      ...passes.map((p) => `${p.code}  ${p.line.eventName}, ${new Date(p.line.startsAt).toISOString()}, ${p.line.ticketTypeName}`),
    ].join('\n'),
    meta: { kind: 'tickets', orderId: order.id, passIds: passes.map((p) => p.id) },
  });
}
