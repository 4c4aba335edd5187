import { statusOf } from '../statuses.ts';
import { fields as f, resource } from './resource.ts';

/**
 * The Event resource (evt_), its fields in wire order: the hand-written reads of
 * src/services/events.ts select them, `/v1` selects and answers them (rest-compat/routes/events.ts),
 * and the sales listing takes its event fields from here. The GraphQL type (schema/types/event.ts)
 * describes each field for admin frontends; test/platform/openapi.test.ts and test/platform/schema-sdl.test.ts hold
 * the two surfaces to the same names.
 */
export const EVENT = resource({
  id: f.text(),
  organisationId: f.text(),
  accountId: f.text(),
  name: f.text(),
  description: f.nullable(f.text()),
  status: f.enumText(statusOf('event')),
  venueId: f.nullable(f.text()),
  timezone: f.text(),
  onSaleDate: f.nullable(f.instant()),
  offSaleDate: f.nullable(f.instant()),
  occurrenceCount: f.count(
    (e) => `(SELECT count(*)::int FROM event_occurrences o
     WHERE o."organisationId" = $1 AND o."eventId" = ${e}.id AND o.status <> 'cancelled')`,
  ),
  ticketCount: f.count(
    (e) => `(SELECT count(*)::int FROM ticket_types tt
     WHERE tt."organisationId" = $1 AND tt."eventId" = ${e}.id AND NOT tt."isDeleted")`,
  ),
  /** Products (beside admission) are not part of the service yet. */
  productCount: f.count(() => '0'),
  tags: f.textList(),
  isDeleted: f.boolean(),
  createdAt: f.instant(),
  updatedAt: f.instant(),
  createdBy: f.nullable(f.text()),
});

/** What event.created carries (docs/spec/service-spec.md §6). */
export const eventPayload = EVENT.view(['id', 'name', 'status', 'accountId', 'venueId', 'timezone', 'createdAt']);

export type EventView = Parameters<typeof eventPayload>[0];
