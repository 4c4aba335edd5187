import { fields as f, resource } from './resource.ts';

/**
 * The TicketType resource (tkt_), its fields in the order `/v1` answers them
 * (rest-compat/routes/events.ts selects and shapes them from here); the GraphQL type
 * (schema/types/ticket-type.ts) describes each field.
 */
export const TICKET_TYPE = resource({
  id: f.text(),
  organisationId: f.text(),
  accountId: f.text(),
  eventId: f.text(),
  name: f.text(),
  description: f.nullable(f.text()),
  priceAmount: f.int(),
  currency: f.text(),
  capacity: f.nullable(f.int()),
  maxPerOrder: f.nullable(f.int()),
  salesStartAt: f.nullable(f.instant()),
  salesEndAt: f.nullable(f.instant()),
  createdAt: f.instant(),
  updatedAt: f.instant(),
});
